//! Report writers, one per format (terminal, Markdown, HTML, JSON, CSV), over one shared
//! in-memory model of the analysis.
