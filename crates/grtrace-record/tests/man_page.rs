//! The man page lists exactly the options the program takes, so the two cannot drift.

#[test]
fn man_page_lists_exactly_the_real_options() {
    let man = include_str!("../../../man/grtrace.8");
    let cmd = <grtrace_record::cli::Args as clap::CommandFactory>::command();
    let drift = grtrace_cli::man_page_drift(&cmd, man);
    assert!(
        drift.is_empty(),
        "man/grtrace.8 and the program disagree: {drift:#?}"
    );
}
