//! The man page lists exactly the options grtimport takes, and the completion scripts offer
//! every one, so neither can drift from the program.

#[test]
fn man_page_lists_exactly_the_real_options() {
    let man = include_str!("../../../man/grtimport.1");
    let cmd = <grtimport::Args as clap::CommandFactory>::command();
    let drift = grtrace_cli::man_page_drift(&cmd, man);
    assert!(
        drift.is_empty(),
        "man/grtimport.1 and grtimport disagree: {drift:#?}"
    );
}

#[test]
fn completions_offer_every_option_in_bash_zsh_and_fish() {
    let cmd = <grtimport::Args as clap::CommandFactory>::command();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_grtimport"));
    let drift = grtrace_cli::completion_drift(bin, &cmd);
    assert!(drift.is_empty(), "{drift:#?}");
}
