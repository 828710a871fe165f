//! `stackbench serve`: the web dashboard and upload API over a results store. Resolves the
//! store, the bind address and the write token, checks the store opens before listening
//! (an unreachable or unreadable store is bad input, exit 2, named without its password),
//! then prints the URL it serves and serves until killed.

use crate::config::Config;
use crate::results::RunStore;
use crate::serve::{DEFAULT_MAX_UPLOAD_BYTES, ServeConfig, WriteToken};
use anyhow::{Context, bail};
use clap::Args;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  stackbench serve                                   # http://127.0.0.1:8765/, read-only
  stackbench serve --results fleet --write-token-file token.txt
  STACKBENCH_SERVE_TOKEN=$(cat token.txt) stackbench serve --bind 0.0.0.0:8765

Runners upload with `analyze-trends record --store http://host:8765` and
STACKBENCH_STORE_TOKEN set to the same token. Without a token the server is read-only:
every write answers 403. The JSON API is documented in docs/reference/http-api.md.

Exit codes: 2 bad input (an unreadable store, a bad address or token file); it serves until killed.")]
pub struct ServeArgs {
    #[arg(long, help = crate::cli::settings::RESULTS_HELP)]
    pub results: Option<PathBuf>,
    /// The config file (results_dir) [default: $STACKBENCH_CONFIG, else ./stackbench.toml
    /// when present]
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The store: `sqlite:PATH` or `postgres://user@host/db` [default: $STACKBENCH_STORE,
    /// else sqlite:<results>/stackbench.db]
    #[arg(long)]
    pub store: Option<String>,
    /// Address to listen on. Only loopback by default: another machine can reach the
    /// server only when an address such as 0.0.0.0:8765 is spelled out here.
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub bind: String,
    /// Listen on this port of the loopback address (127.0.0.1:PORT), as `asv preview` and
    /// `python -m http.server` take it; --bind names another address
    #[arg(long, conflicts_with = "bind")]
    pub port: Option<u16>,
    /// A file holding the write token that uploads must present [default:
    /// $STACKBENCH_SERVE_TOKEN; neither: read-only]
    #[arg(long)]
    pub write_token_file: Option<PathBuf>,
    /// The largest request body accepted, in bytes (a run file holds every sample)
    #[arg(long, default_value_t = DEFAULT_MAX_UPLOAD_BYTES)]
    pub max_upload_bytes: usize,
}

/// Runs the command: exit 2 for anything wrong before the server listens.
pub fn main(args: ServeArgs) -> ExitCode {
    let (config, listener) = match prepare(&args) {
        Ok(ready) => ready,
        Err(e) => {
            super::errors::report("stackbench serve", format_args!("{e:#}"));
            return ExitCode::from(2);
        }
    };
    match crate::serve::run(config, listener) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            super::errors::report("stackbench serve", e);
            ExitCode::FAILURE
        }
    }
}

/// `--port N` (loopback) or `--bind ADDR`.
fn listen_address(args: &ServeArgs) -> anyhow::Result<SocketAddr> {
    if let Some(port) = args.port {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    args.bind.parse().with_context(|| {
        format!(
            "--bind {}: not an address and port such as 127.0.0.1:8765",
            args.bind
        )
    })
}

/// Everything up to a bound listener, with the line saying where it serves printed.
fn prepare(args: &ServeArgs) -> anyhow::Result<(ServeConfig, std::net::TcpListener)> {
    let addr = listen_address(args)?;
    if args.max_upload_bytes == 0 {
        bail!("--max-upload-bytes must be at least 1");
    }
    let write_token = WriteToken::resolve(args.write_token_file.as_deref())?;
    // The config may name the results directory and the store.
    let config = Config::discover(args.config.as_deref())?;
    let results = crate::cli::settings::results_dir_of(args.results.clone(), &config);
    let (store, store_label) = open_store(
        &results,
        args.store.as_deref(),
        &config,
        write_token.is_some(),
    )?;
    let listener = crate::serve::bind(addr)?;
    let local = listener.local_addr().unwrap_or(addr);
    if !local.ip().is_loopback() {
        eprintln!(
            "stackbench serve: warning: listening on {local}, reachable from other machines{}",
            if write_token.is_some() {
                "; uploads need the write token, but it travels in clear text over plain HTTP"
            } else {
                ""
            }
        );
    }
    let mode = if write_token.is_some() {
        "accepting uploads with the write token"
    } else {
        "read-only"
    };
    // Tests and scripts read the port of `--bind host:0` from this line.
    println!("stackbench serve: http://{local}/ (store {store_label}, {mode})");
    let _ = std::io::stdout().flush();
    let config = ServeConfig {
        store,
        store_label,
        write_token,
        max_upload_bytes: args.max_upload_bytes,
        prices: config.prices.clone(),
    };
    Ok((config, listener))
}

/// The store the server reads (`--store` > `$STACKBENCH_STORE` > the config's `store` >
/// `<results>/stackbench.db`), checked to open before anything listens. A read-only server
/// never creates a results directory for its own SQLite file; a writable one may start
/// empty. The label names the store without its password.
fn open_store(
    results: &Path,
    flag: Option<&str>,
    config: &Config,
    writable: bool,
) -> anyhow::Result<(RunStore, String)> {
    let store = crate::cli::store::store_for(results, flag, config)?;
    let url = store.store_url();
    let label = url.to_string();
    if let Some(path) = url.sqlite_path()
        && !writable
        && !path.exists()
        && !results.is_dir()
    {
        bail!(
            "cannot open the store {label}: it does not exist (a read-only server creates nothing; record or import runs first, or start it with a write token)"
        );
    }
    store
        .database()
        .with_context(|| format!("cannot open the store {label}"))?;
    Ok((store, label))
}

#[cfg(test)]
mod listen_tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn address(args: &[&str]) -> Result<SocketAddr, String> {
        let wrap = Wrap::try_parse_from(std::iter::once("serve").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        listen_address(&wrap.serve).map_err(|e| format!("{e:#}"))
    }

    #[test]
    fn port_listens_on_loopback_and_bind_names_any_address() {
        assert_eq!(address(&[]), Ok("127.0.0.1:8765".parse().unwrap()));
        assert_eq!(
            address(&["--port", "9000"]),
            Ok("127.0.0.1:9000".parse().unwrap())
        );
        assert_eq!(
            address(&["--bind", "0.0.0.0:8080"]),
            Ok("0.0.0.0:8080".parse().unwrap())
        );
        let both = address(&["--port", "9000", "--bind", "0.0.0.0:1"]).unwrap_err();
        assert!(both.contains("cannot be used with"), "{both}");
        let bad = address(&["--bind", "localhost"]).unwrap_err();
        assert!(bad.contains("--bind localhost: not an address"), "{bad}");
        assert!(address(&["--port", "70000"]).is_err());
    }
}
