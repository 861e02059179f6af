//! Hostile PDFs (issue 31, item 1): a few KiB that cost a naive parser gigabytes are refused
//! with 422 naming `document`, quickly, while the service keeps answering everyone else.

use std::time::{Duration, Instant};

use idconsent_e2e::pdf::{deflate_bomb, object_stream_bomb};
use idconsent_e2e::{TestApp, error, json};

use super::documents::pdf;
use super::{body, create};

/// A hostile upload is answered within this (the parser's child dies at its memory limit
/// long before its time limit).
const QUICKLY: Duration = Duration::from_secs(5);
/// What any other request may take while hostile ones are parsed.
const PROMPTLY: Duration = Duration::from_secs(1);

pub async fn hostile_pdfs_are_refused_quickly_while_others_are_served(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = application.sandbox_key.clone();
    let one = [("ann@example.com", "Ann")];

    // 1,024 objects of 1 MiB each for a parser that reads every index pair on its own: 1 GiB
    // from a 10 KiB upload.
    let bomb = object_stream_bomb(1024, 1 << 20);
    assert!(bomb.len() < 16 << 10, "{} bytes", bomb.len());
    let hostile = body(&bomb, &one);

    // Two at once, as many as the test server has HTTP workers, and meanwhile the health
    // check and a valid upload.
    let started = Instant::now();
    let attacks =
        futures_util::future::join_all((0..2).map(|_| create(&app, &application, &key, &hostile)));
    let others = async {
        let mut slowest = Duration::ZERO;
        for _ in 0..3 {
            let asked = Instant::now();
            json(app.get("/healthz").await, 200).await;
            slowest = slowest.max(asked.elapsed());
        }
        let asked = Instant::now();
        json(
            create(&app, &application, &key, &body(&pdf(2, ""), &one)).await,
            201,
        )
        .await;
        (slowest, asked.elapsed())
    };
    let (answers, (slowest_health, valid_upload)) = tokio::join!(attacks, others);
    let elapsed = started.elapsed();
    for answer in answers {
        let refused = error(answer, 422, "validation_error").await;
        assert_eq!(refused["details"][0]["field"], "document", "{refused}");
        // The client learns the document is refused, not which limit the parser met.
        let message = refused["details"][0]["message"].as_str().unwrap();
        assert!(
            !message.contains("memory") && !message.contains("time"),
            "{message}"
        );
    }
    assert!(elapsed < QUICKLY, "the hostile uploads took {elapsed:?}");
    assert!(
        slowest_health < PROMPTLY,
        "the health check took {slowest_health:?} while hostile PDFs were parsed"
    );
    assert!(
        valid_upload < QUICKLY,
        "a valid upload took {valid_upload:?} while hostile PDFs were parsed"
    );

    // A stream that inflates past any sane size is refused the same way.
    let refused = error(
        create(
            &app,
            &application,
            &key,
            &body(&deflate_bomb(300 << 20), &one),
        )
        .await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(refused["details"][0]["field"], "document", "{refused}");
}

/// A parser that never answers (a stalled child) holds its slot until its deadline, then the
/// upload is refused; meanwhile another upload waits the queue time and is told to come back
/// (503 with `Retry-After`), not queued without end.
async fn a_full_parser_pool_answers_503_with_retry_after(backend: idconsent_e2e::Backend) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let stalled = dir.path().join("stalled-worker");
    std::fs::write(
        &stalled,
        "#!/bin/sh\nif [ \"$2\" = ping ]; then printf pong; exit 0; fi\nexec /bin/sleep 30\n",
    )
    .unwrap();
    std::fs::set_permissions(&stalled, std::fs::Permissions::from_mode(0o755)).unwrap();
    let Some(app) = TestApp::start_with(backend, |config| {
        config.untrusted.worker = stalled.clone();
        config.untrusted.parallel = 1;
        config.untrusted.timeout = Duration::from_secs(2);
        config.untrusted.queue_wait = Duration::from_millis(300);
    })
    .await
    else {
        return;
    };
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = application.sandbox_key.clone();
    let upload = body(&pdf(1, ""), &[("ann@example.com", "Ann")]);

    let started = Instant::now();
    let (first, second) = tokio::join!(
        create(&app, &application, &key, &upload),
        create(&app, &application, &key, &upload)
    );
    let mut statuses = [first.status().as_u16(), second.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [422, 503]);
    for answer in [first, second] {
        if answer.status() == 503 {
            assert!(answer.headers().contains_key("retry-after"), "{answer:?}");
            error(answer, 503, "service_unavailable").await;
        } else {
            let refused = error(answer, 422, "validation_error").await;
            assert_eq!(refused["details"][0]["field"], "document", "{refused}");
        }
    }
    // The stalled child was killed at its deadline, not left to sleep on.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_parser_pool_answers_503_with_retry_after_on_sqlite() {
    a_full_parser_pool_answers_503_with_retry_after(idconsent_e2e::Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_parser_pool_answers_503_with_retry_after_on_postgres() {
    a_full_parser_pool_answers_503_with_retry_after(idconsent_e2e::Backend::Postgres).await;
}
