//! grtparse binary: a thin wrapper over the library (see `grtparse --help`).
use clap::Parser;

fn main() {
    let cli = grtparse::Cli::parse();
    if cli.completions.print_if_asked::<grtparse::Cli>() {
        return;
    }
    let code = grtparse::run(cli, &mut std::io::stderr());
    std::process::exit(code);
}
