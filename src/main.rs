fn main() {
    std::process::exit(wbsim::cli::main());
}
