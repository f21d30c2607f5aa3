//! The man page lists exactly the options the program takes, so the two cannot drift.

#[test]
fn man_page_lists_exactly_the_real_options() {
    let man = include_str!("../../../man/grtreport.1");
    let cmd = <grtreport::cli::Args as clap::CommandFactory>::command();
    let drift = grtrace_cli::man_page_drift(&cmd, man);
    assert!(
        drift.is_empty(),
        "man/grtreport.1 and grtreport disagree: {drift:#?}"
    );
}

#[test]
fn completions_offer_every_option_in_bash_zsh_and_fish() {
    let cmd = <grtreport::cli::Args as clap::CommandFactory>::command();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_grtreport"));
    let drift = grtrace_cli::completion_drift(bin, &cmd);
    assert!(drift.is_empty(), "{drift:#?}");
}
