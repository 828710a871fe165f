//! The Python component runner: how stackbench measures the components a user installed
//! (PyTorch, attention kernels, Triton, vLLM, DeepSpeed, ONNX Runtime, OpenVINO,
//! MIGraphX, a tiny GPT) in *their* Python environment, never a private copy.
//!
//! Those components only exist in Python, so each runs in a long-lived worker process
//! (`scripts/components/<name>.py`) that speaks JSON lines over stdin/stdout
//! ([`protocol`]). The worker times `iters` back-to-back calls itself (host clock after a
//! synchronize on CPU, CUDA events on a GPU) and returns the total, which is exactly
//! Criterion's `iter_custom` contract: warm-up, sampling and statistics stay Criterion's,
//! and no pipe round trip is inside the timed window.
//!
//! Python stacks misbehave: imports crash, kernels hang, libraries print to stdout. So the
//! runner isolates each worker in its own process group ([`worker`]), bounds every call
//! by a timeout, tolerates and logs stray output, and turns every failure into a skip or
//! failure *with the tail of the worker's stderr*, while the other components go on.
//!
//! - [`interpreter`]: which Python to use (`STACKBENCH_PYTHON`, the active virtualenv or
//!   conda env, else `python3`) and its version.
//! - [`worker`]: one process, its pipes, timeouts and the kill of its process group.
//! - [`session`]: one component's worker, what it offers, and the [`TimedWorkload`]
//!   adapter that the harness times.
//! - [`suite`]: the loop `cargo bench --bench components` runs over every component.
//!
//! One component, `collectives`, runs many processes: its worker execs `torchrun`, rank 0
//! speaks the protocol for all ranks, and each rank dies with torchrun's agent
//! (`PR_SET_PDEATHSIG`), so the group kill here still leaves nothing behind
//! (`scripts/components/collectives.py`).
//!
//! [`TimedWorkload`]: crate::backend::TimedWorkload

pub mod alloc;
pub mod compile;
pub mod config;
pub mod interpreter;
pub mod protocol;
pub mod session;
pub mod suite;
pub mod sweep;
pub mod worker;

pub use config::RunnerConfig;
pub use interpreter::{Interpreter, InterpreterError, InterpreterSource};
pub use session::{ComponentSession, OfferedBenchmark, SessionError};
pub use worker::{Worker, WorkerError};

/// The benchmark family every component id starts with: `components/<component>/...`.
pub const FAMILY: &str = crate::workload::family::COMPONENTS.name;

/// Every component, in the order the suite runs them: named once, in the model, so that
/// the configuration can check a suite's components without reaching up into the runner.
pub use crate::workload::components::COMPONENTS;
