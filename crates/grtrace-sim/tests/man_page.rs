//! The man page lists exactly the options the program takes, so the two cannot drift.

#[test]
fn man_page_lists_exactly_the_real_options() {
    let man = include_str!("../../../man/grtsim.1");
    let cmd = <grtrace_sim::cli::Args as clap::CommandFactory>::command();
    let drift = grtrace_cli::man_page_drift(&cmd, man);
    assert!(
        drift.is_empty(),
        "man/grtsim.1 and the program disagree: {drift:#?}"
    );
}

#[test]
fn completions_offer_every_option_in_bash_zsh_and_fish() {
    let cmd = <grtrace_sim::cli::Args as clap::CommandFactory>::command();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_grtsim"));
    let drift = grtrace_cli::completion_drift(bin, &cmd);
    assert!(drift.is_empty(), "{drift:#?}");
}
