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
