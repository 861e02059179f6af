//! Settings: parsing, defaults, refusals.
use super::*;
use clap::Parser;

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    settings: Settings,
}

fn settings(args: &[&str]) -> Settings {
    let mut argv = vec!["idconsent"];
    argv.extend_from_slice(args);
    Wrapper::parse_from(argv).settings
}

#[test]
fn dev_mode_generates_and_then_reuses_keys() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let first = settings(&["--data-dir", data_dir, "--mode", "dev"])
        .resolve()
        .unwrap();
    let second = settings(&["--data-dir", data_dir, "--mode", "dev"])
        .resolve()
        .unwrap();
    assert_eq!(first.master_key, second.master_key);
    assert_eq!(
        first.admin_token.expose_secret(),
        second.admin_token.expose_secret()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("master.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn production_requires_real_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let error = settings(&["--data-dir", data_dir, "--mode", "production"])
        .resolve()
        .unwrap_err();
    assert!(error.to_string().contains("IDC_MASTER_KEY"));
    let key = BASE64.encode([1u8; 32]);
    let error = settings(&[
        "--data-dir",
        data_dir,
        "--mode",
        "production",
        "--master-key",
        &key,
    ])
    .resolve()
    .unwrap_err();
    assert!(error.to_string().contains("IDC_ADMIN_TOKEN"));
    let token = "t".repeat(40);
    let production = [
        "--data-dir",
        data_dir,
        "--mode",
        "production",
        "--master-key",
        &key,
        "--admin-token",
        &token,
    ];
    // The two secrets are all production needs (CONTRACT §9): signing keys live in the
    // database.
    let config = settings(&production).resolve().unwrap();
    assert_eq!(config.mode, Mode::Production);
    assert_eq!(config.oauth.import_keys_from, None);
    assert!(!dir.path().join("master.key").exists());
}

#[test]
fn bad_values_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let short_key = BASE64.encode([1u8; 16]);
    assert!(matches!(
        settings(&["--data-dir", data_dir, "--master-key", &short_key]).resolve(),
        Err(ConfigError::MasterKeyFormat)
    ));
    assert!(matches!(
        settings(&["--data-dir", data_dir, "--admin-token", "short"]).resolve(),
        Err(ConfigError::AdminTokenTooShort)
    ));
    assert!(matches!(
        settings(&["--data-dir", data_dir, "--base-url", "ftp://x"]).resolve(),
        Err(ConfigError::BaseUrl)
    ));
}

#[test]
fn dev_mode_listens_on_loopback_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    for bind in [
        "0.0.0.0:8080",
        "[::]:8080",
        "10.0.0.5:8080",
        "example.com:80",
    ] {
        let refused = settings(&["--data-dir", data_dir, "--bind", bind]).resolve();
        assert!(
            matches!(
                refused,
                Err(ConfigError::Invalid {
                    variable: "IDC_BIND",
                    ..
                })
            ),
            "{bind}"
        );
        settings(&["--data-dir", data_dir, "--bind", bind, "--dev-allow-remote"])
            .resolve()
            .unwrap();
    }
    for bind in [
        "127.0.0.1:8080",
        "127.1.2.3:1",
        "[::1]:8080",
        "localhost:8080",
    ] {
        settings(&["--data-dir", data_dir, "--bind", bind])
            .resolve()
            .unwrap();
    }
}

#[test]
fn debug_output_hides_secrets() {
    let config = Config::for_tests(PathBuf::from("data"), "postgres://u:pw@h/db".into());
    let shown = format!("{config:?}");
    assert!(!shown.contains("pw@"), "{shown}");
    assert!(!shown.contains("test-admin-token"), "{shown}");
}

#[test]
fn base_url_loses_its_trailing_slash() {
    assert_eq!(
        normalise_base_url("https://id.example/".into()).unwrap(),
        "https://id.example"
    );
    assert!(normalise_base_url("https://".into()).is_err());
}

#[test]
fn untrusted_input_bounds_have_defaults_and_refuse_nonsense() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let config = settings(&["--data-dir", data_dir]).resolve().unwrap();
    assert_eq!(config.untrusted.worker, std::env::current_exe().unwrap());
    assert_eq!(config.untrusted.memory_bytes, 512 << 20);
    assert_eq!(config.untrusted.timeout, Duration::from_secs(10));
    assert_eq!(config.untrusted.parallel, 2);
    assert_eq!(config.untrusted.queue_wait, Duration::from_secs(5));
    assert_eq!(config.identity.sandbox_daily_cap, 100);
    for (flag, value, variable) in [
        ("--untrusted-memory-mib", "0", "IDC_UNTRUSTED_MEMORY_MIB"),
        (
            "--untrusted-timeout-seconds",
            "0",
            "IDC_UNTRUSTED_TIMEOUT_SECONDS",
        ),
        ("--untrusted-parallel", "0", "IDC_UNTRUSTED_PARALLEL"),
        (
            "--untrusted-queue-seconds",
            "601",
            "IDC_UNTRUSTED_QUEUE_SECONDS",
        ),
    ] {
        let refused = settings(&["--data-dir", data_dir, flag, value]).resolve();
        assert!(
            matches!(refused, Err(ConfigError::Invalid { variable: v, .. }) if v == variable),
            "{flag} {value}: {refused:?}"
        );
    }
}
