//! Every -f/-F value gets a usage error or works: never a panic, whatever the string.

use std::path::Path;

use proptest::prelude::*;

fn fixture() -> std::ffi::OsString {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/parse/every/run")
        .into_os_string()
}

/// Format-like text: mostly %, digits, field letters, commas, backslashes and names.
fn formatish() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just("%".to_string()),
        Just("%-".to_string()),
        Just("\\".to_string()),
        Just(",".to_string()),
        Just("SUBMIT".to_string()),
        Just("END".to_string()),
        Just("EVENT_63".to_string()),
        "[0-9]{1,4}",
        "[a-zA-Z]",
        "[ -~]",
        any::<char>().prop_map(|c| c.to_string()),
    ];
    proptest::collection::vec(atoms, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn format_strings_never_panic(f in formatish(), spec in formatish()) {
        for (format, specs) in [
            (Some(f.clone()), vec![]),
            (None, vec![spec.clone()]),
            (Some(f.clone()), vec![spec.clone(), format!("MSG,{f}")]),
        ] {
            let cli = grtparse::Cli {
                input: grtrace_cli::InputArgs {
                    inputs: vec![fixture()],
                    ..Default::default()
                },
                output: Some("/dev/null".into()),
                format,
                format_spec: specs,
                quiet: grtrace_cli::QuietArgs { quiet: true },
                ..Default::default()
            };
            let mut err = Vec::new();
            let code = grtparse::run_to(cli, &mut err);
            let e = String::from_utf8_lossy(&err);
            prop_assert!(code == 0 || code == 2, "{code}: {e}");
            prop_assert!(code == 0 || e.lines().count() == 1, "{e}");
        }
    }
}
