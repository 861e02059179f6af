//! The chip challenge and the verify body: binding, single use, and bad input that spends nothing.

use super::*;

pub(super) async fn challenges_are_bound_to_their_application_and_single_use(world: World) {
    let merchant = world.app.register_merchant().await;
    let other = world.app.application(&merchant).await;
    let chip = world.chip(&with_aa());
    let theirs = world.challenge_for(&other).await;
    let answer = chip.answer(&theirs);
    let chip_body = body(
        chip_json(&chip, Some((&theirs, answer))),
        None,
        Some(CHIP_CHECKS),
    );
    // Another application's challenge is not accepted here…
    let response = world.submit_as(&world.application, &chip_body).await;
    error(response, 422, "validation_error").await;
    // …and was not spent: its own application uses it once, and only once.
    let response = world.submit_as(&other, &chip_body).await;
    json(response, 201).await;
    let response = world.submit_as(&other, &chip_body).await;
    error(response, 422, "validation_error").await;

    // Twenty concurrent submissions of one challenge: exactly one is accepted.
    let challenge = world.challenge().await;
    let answer = chip.answer(&challenge);
    let racing = body(
        chip_json(&chip, Some((&challenge, answer))),
        None,
        Some(CHIP_CHECKS),
    );
    let statuses = futures_util::future::join_all(
        (0..20).map(|_| world.submit_as(&world.application, &racing)),
    )
    .await
    .into_iter()
    .map(|response| response.status().as_u16())
    .collect::<Vec<_>>();
    assert_eq!(
        statuses.iter().filter(|status| **status == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|status| **status == 422).count(),
        19,
        "{statuses:?}"
    );

    // An expired challenge is refused.
    let challenge = world.challenge().await;
    world.app.advance(Duration::from_secs(5 * 60));
    let answer = chip.answer(&challenge);
    let response = world
        .submit_as(
            &world.application,
            &body(
                chip_json(&chip, Some((&challenge, answer))),
                None,
                Some(CHIP_CHECKS),
            ),
        )
        .await;
    error(response, 422, "validation_error").await;
}

pub(super) async fn bad_chip_requests_are_refused_and_spend_nothing(world: World) {
    let chip = world.chip(&with_aa());
    let challenge = world.challenge().await;
    let answer = chip.answer(&challenge);
    let good = chip_json(&chip, Some((&challenge, answer)));
    let field_of = |body: &Value| body.to_string();
    let cases: Vec<(Value, &str)> = vec![
        (
            {
                let mut c = good.clone();
                c["dg1"] = json!("not base64!");
                body(c, None, None)
            },
            "chip.dg1",
        ),
        (
            {
                let mut c = good.clone();
                c["sod"] = json!(BASE64.encode(&chip.dg1));
                body(c, None, None)
            },
            "chip.sod",
        ),
        (
            {
                let mut c = good.clone();
                c["dg2"] = json!(BASE64.encode([0x75, 0x05, 1]));
                body(c, None, None)
            },
            "chip.dg2",
        ),
        (
            {
                let mut c = good.clone();
                c["activeAuthentication"]["challenge"] = json!(BASE64.encode([1, 2, 3]));
                body(c, None, None)
            },
            "chip.activeAuthentication.challenge",
        ),
        (
            {
                let mut c = good.clone();
                c["dg15"] = json!(BASE64.encode(vec![0x6F; 70_000]));
                body(c, None, None)
            },
            "chip.dg15",
        ),
        (body(good.clone(), None, Some(&[])), "requiredChecks"),
        (
            body(
                good.clone(),
                None,
                Some(&["documentAuthenticity", "astrology"]),
            ),
            "requiredChecks",
        ),
        (
            {
                let mut b = body(good.clone(), None, None);
                b["documentType"] = json!("drivers_license");
                b["documentBack"] = json!(BASE64.encode(natural(3)));
                b
            },
            "chip",
        ),
    ];
    for (request, field) in cases {
        let response = world.submit_as(&world.application, &request).await;
        let refused = error(response, 422, "validation_error").await;
        assert!(
            field_of(&refused).contains(&format!("\"{field}\"")),
            "{field}: {refused}"
        );
    }
    // None of them spent the challenge.
    let data = world.verified(&body(good, None, Some(CHIP_CHECKS))).await;
    assert_eq!(data["status"], "verified", "{data}");
}
