//! The man page lists exactly the options grtimport takes, and the completion scripts offer
//! every one, so neither can drift from the program.

grtrace_cli::man_page_tests!(
    grtimport::Args,
    "grtimport.1",
    env!("CARGO_BIN_EXE_grtimport")
);
