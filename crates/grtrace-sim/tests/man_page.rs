//! The man page lists exactly the options the program takes, and the completion scripts
//! offer every one, so neither can drift from the program.

grtrace_cli::man_page_tests!(
    grtrace_sim::cli::Args,
    "grtsim.1",
    env!("CARGO_BIN_EXE_grtsim")
);
