//! `nsqlab`: one binary with subcommands named after NSQ's programs. Invoked through a
//! symlink named `nsqd`, it is `nsqlab nsqd`.

use clap::Parser;
use nsqlab::nsqd::NsqdArgs;

/// NSQ's program names: through a symlink with one of these names, the binary is that program.
const PROGRAMS: &[(&str, &str)] = &[
    ("nsqd", "nsqd"),
    ("nsqlookupd", "nsqlookupd"),
    ("nsq_tail", "tail"),
    ("nsq_to_file", "to_file"),
    ("to_nsq", "to_nsq"),
    ("nsq_stat", "stat"),
];

fn usage() -> ! {
    eprintln!(
        "usage: nsqlab <command> [flags]\n\ncommands:\n  nsqd        an NSQ daemon (drop-in nsqd v1.3)\n  nsqlookupd  the discovery service (drop-in nsqlookupd v1.3)\n  tail        print a topic's messages (nsq_tail)\n  to_file     write topics to rotating files (nsq_to_file)\n  to_nsq      publish stdin lines (to_nsq)\n  stat        a channel's numbers every interval (nsq_stat)\n  bench       benchmark clients: writer, reader, lateness, deferred-mem, latency
  demo        print a DPUB's life through the core, in virtual time\n  version     print the version"
    );
    std::process::exit(2);
}

/// A daemon's `FATAL` line (`[nsqd] <time> FATAL: …`) and exit 1.
fn fatal(name: &str, msg: impl std::fmt::Display) -> ! {
    eprintln!(
        "[{name}] {} FATAL: {msg}",
        nsqlab::logging::timestamp(nsqlab::clock::now())
    );
    std::process::exit(1);
}

/// A daemon's arguments with its `--config` file folded in.
fn daemon_argv(name: &str, rest: Vec<String>) -> Vec<String> {
    let argv = std::iter::once(name.to_string()).chain(rest).collect();
    // The program decides which options exist.
    let command = match name {
        "nsqlookupd" => <nsqlab::nsqlookupd::LookupdArgs as clap::CommandFactory>::command(),
        _ => <nsqlab::nsqd::NsqdArgs as clap::CommandFactory>::command(),
    };
    nsqlab::nsqd::options::with_config_file(argv, &command).unwrap_or_else(|e| fatal(name, e))
}

/// `--version` (printed: nothing to run) or the logger; true when the daemon should run.
fn daemon_setup(name: &str, version: bool, prefix: &str, level: &str) -> bool {
    if version {
        println!("{}", nsqlab::version_line(name));
        return false;
    }
    if let Err(e) = nsqlab::logging::init(prefix, level) {
        fatal(name, format!("failed parsing log_level {e}"));
    }
    true
}

/// A tool's argv: its first word is what the tool was invoked as through a symlink (as Go's
/// `os.Args[0]`: `nsq_tail`, `./nsq_tail`, `/usr/bin/nsq_tail`), else its NSQ name.
fn tool_argv(name: &str, invoked: Option<&str>, rest: Vec<String>) -> Vec<String> {
    std::iter::once(invoked.unwrap_or(name).to_string())
        .chain(rest)
        .collect()
}

/// A daemon that could not start: Go's `logFatal("failed to instantiate nsqd - %s", err)`
/// (one line with the log prefix and time), then exit 1.
fn failed_to_instantiate(prefix: &str, program: &str, e: anyhow::Error) -> ! {
    if let Some(stopped) = e.downcast_ref::<nsqlab::nsqd::Stopped>() {
        // It had started: it failed while running.
        eprintln!(
            "{prefix}{} FATAL: {stopped}",
            nsqlab::logging::timestamp(nsqlab::clock::now())
        );
        std::process::exit(1);
    }
    eprintln!(
        "{prefix}{} FATAL: failed to instantiate {program} - {e:#}",
        nsqlab::logging::timestamp(nsqlab::clock::now())
    );
    std::process::exit(1);
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let invoked_as = args[0].clone();
    let argv0 = std::path::Path::new(&args[0])
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("nsqlab")
        .to_string();
    // Called as `nsqd` (a symlink): behave as `nsqlab nsqd`; likewise for NSQ's other programs.
    let symlinked = PROGRAMS.iter().find(|(name, _)| *name == argv0);
    let invoked = symlinked.map(|_| invoked_as.as_str());
    let program = if let Some((_, sub)) = symlinked {
        sub.to_string()
    } else {
        if args.len() < 2 {
            usage();
        }
        args.remove(1)
    };
    let value_flags = {
        use clap::CommandFactory;
        use nsqlab::tools;
        nsqlab::cli::value_flags(&match program.as_str() {
            "nsqd" => NsqdArgs::command(),
            "nsqlookupd" => nsqlab::nsqlookupd::LookupdArgs::command(),
            "tail" => tools::tail::TailArgs::command(),
            "to_file" => tools::to_file::ToFileArgs::command(),
            "to_nsq" => tools::to_nsq::ToNsqArgs::command(),
            "stat" => tools::stat::StatArgs::command(),
            _ => clap::Command::new("other"),
        })
    };
    let rest = nsqlab::cli::normalize(args.into_iter().skip(1), &value_flags);
    match program.as_str() {
        "nsqd" => {
            let host = nsqlab::common::hostname();
            let parsed: NsqdArgs = nsqlab::cli::parse_showing(
                daemon_argv("nsqd", rest),
                &[
                    (
                        "node-id",
                        nsqlab::nsqd::options::default_node_id(&host).to_string(),
                    ),
                    ("broadcast-address", host.clone()),
                ],
            );
            if daemon_setup(
                "nsqd",
                parsed.version,
                &parsed.log_prefix,
                &parsed.log_level,
            ) {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(parsed.worker_thread_count())
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                let prefix = parsed.log_prefix.clone();
                if let Err(e) = rt.block_on(nsqlab::nsqd::run(parsed)) {
                    failed_to_instantiate(&prefix, "nsqd", e);
                }
            }
        }
        "nsqlookupd" => {
            let parsed = nsqlab::cli::parse_showing::<nsqlab::nsqlookupd::LookupdArgs>(
                daemon_argv("nsqlookupd", rest),
                &[("broadcast-address", nsqlab::common::hostname())],
            );
            if daemon_setup(
                "nsqlookupd",
                parsed.version,
                &parsed.log_prefix,
                &parsed.log_level,
            ) {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                let prefix = parsed.log_prefix.clone();
                if let Err(e) = rt.block_on(nsqlab::nsqlookupd::run(parsed)) {
                    failed_to_instantiate(&prefix, "nsqlookupd", e);
                }
            }
        }
        "tail" => nsqlab::tools::tail::main(tool_argv("nsq_tail", invoked, rest)),
        "to_file" => nsqlab::tools::to_file::main(tool_argv("nsq_to_file", invoked, rest)),
        "to_nsq" => nsqlab::tools::to_nsq::main(tool_argv("to_nsq", invoked, rest)),
        "stat" => nsqlab::tools::stat::main(tool_argv("nsq_stat", invoked, rest)),
        "demo" => nsqlab::demo::run(),
        "bench" => {
            #[derive(clap::Parser)]
            #[command(name = "nsqlab bench")]
            struct B {
                #[command(subcommand)]
                b: nsqlab::bench::Bench,
            }
            let b = B::parse_from(std::iter::once("nsqlab bench".to_string()).chain(rest));
            if let Err(e) = nsqlab::bench::run(b.b) {
                eprintln!("nsqlab bench: {e:#}");
                std::process::exit(1);
            }
        }
        "version" | "--version" => println!("nsqlab v{}", env!("CARGO_PKG_VERSION")),
        _ => usage(),
    }
}
