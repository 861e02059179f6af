//! The proof of the approval seam (issue 32, ADR 0040): the example purpose
//! (`crates/approval-example`, the server's feature `idconsent-approval-example`) is approved
//! on the hosted page at `/approve/example/{id}` and in the app — with nothing for it in the
//! server but its registration. A note is a file its crate reads; what the page shows, whether
//! a passkey is needed and what a decision writes are the crate's.

use idconsent_e2e::enduser::AppUser;
use idconsent_e2e::hosted::PageVisitor;
use idconsent_e2e::scenario::unique;
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use serde_json::{Value, json};

on_both_backends!(
    a_note_to_an_email_is_approved_on_the_hosted_page,
    a_note_to_a_phone_is_approved_in_the_app,
);

/// Writes a note as its crate stores it; its id.
fn post_note(app: &TestApp, note: Value) -> String {
    let id = format!("ex_{}", unique().replace(['-', '_'], ""));
    let dir = app.data_dir().join("example-notes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.json")), note.to_string()).unwrap();
    id
}

fn read_note(app: &TestApp, id: &str) -> Value {
    let path = app.data_dir().join(format!("example-notes/{id}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

async fn a_note_to_an_email_is_approved_on_the_hosted_page(app: TestApp) {
    let email = PageVisitor::address();
    let id = post_note(
        &app,
        json!({"recipient": email, "title": "Borrow the ladder", "amountMinor": 1250,
               "currency": "EUR", "passkeyRequired": true}),
    );
    let mut visitor = PageVisitor::at(&email, &format!("/approve/example/{id}"));
    let html = visitor.load(&app).await;
    // What the crate says to show, the amount written from minor units.
    assert!(
        html.contains("<p id=\"title\">Borrow the ladder</p>"),
        "{html}"
    );
    assert!(html.contains("12.50 EUR"), "{html}");
    assert!(html.contains("data-passkey=\"required\""), "{html}");
    assert!(!html.contains(&email), "the address is masked");

    // The crate's rule: this note needs a passkey, so a decision without one is refused.
    let token = visitor.token(&app).await;
    let refused = visitor.decide(&app, &token, "approve", &Value::Null).await;
    error(refused, 401, "unauthorized").await;
    assert!(
        read_note(&app, &id).get("decidedBy").is_none(),
        "nothing decided"
    );

    // The refusal used nothing up: the same token goes on with a passkey.
    let step = visitor.passkey_step(&app, &token).await;
    assert_eq!(step["context"]["type"], "example");
    assert_eq!(step["context"]["noteId"], id.as_str());
    let assertion = visitor.assert(&step);
    let decided = json(
        visitor.decide(&app, &token, "approve", &assertion).await,
        200,
    )
    .await;
    assert_eq!(decided["data"]["status"], "approved");
    let stored = read_note(&app, &id);
    assert_eq!(stored["status"], "approved");
    assert_eq!(stored["decidedBy"], "hosted_page");

    // Decided once: the page says what it is now, the token decides nothing more.
    let closed = app.get(&visitor.page).await;
    assert_eq!(closed.status(), 409);
    assert!(closed.text().await.unwrap().contains("approved"));
    // Unknown kinds and malformed ids are not found; nothing is written.
    error(
        app.get(&format!("/approve/nothing/{id}")).await,
        404,
        "not_found",
    )
    .await;
    error(
        app.get("/approve/example/ex_..%2Fx").await,
        404,
        "not_found",
    )
    .await;
    error(app.get("/approve/Example/ex_1").await, 404, "not_found").await;
    app.stop().await;
}

async fn a_note_to_a_phone_is_approved_in_the_app(app: TestApp) {
    let mut user = AppUser::enrolled(&app).await;
    let id = post_note(
        &app,
        json!({"recipient": user.phone, "title": "Water the plants", "passkeyRequired": true}),
    );
    // A note for a phone has no hosted page.
    error(
        app.get(&format!("/approve/example/{id}")).await,
        404,
        "not_found",
    )
    .await;

    // Another phone cannot even begin.
    let stranger = AppUser::enrolled(&app).await;
    error(
        stranger.begin(&app, "example", Some(&id)).await,
        404,
        "not_found",
    )
    .await;

    let begun = user.begun(&app, "example", Some(&id)).await;
    assert_eq!(begun["context"]["title"], "Water the plants");
    let credential = user.sign(&begun);
    let completed = json(
        user.complete(&app, &begun, &credential, "reject").await,
        200,
    )
    .await;
    assert_eq!(completed["data"]["status"], "declined");
    let stored = read_note(&app, &id);
    assert_eq!(stored["status"], "declined");
    assert_eq!(stored["decidedBy"], "app");

    // Replayed: the note is no longer pending.
    let again = user.complete(&app, &begun, &credential, "approve").await;
    assert!(again.status().is_client_error(), "{}", again.status());
    assert_eq!(read_note(&app, &id)["status"], "declined");
    app.stop().await;
}
