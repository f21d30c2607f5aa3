fn main() {
    std::process::exit(grtreport::cli::main());
}
