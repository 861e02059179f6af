//! The hosted page's HTML, from what the kind's target says to show ([`Page`]): one template
//! for every purpose. Every text is escaped; the steps are run by [`steps_script`].

use idconsent_approval::{Line, Page};

use super::page::{STEPS_STYLE, escape, steps_script};

/// `ann@example.com` → `a••@example.com`: the page names the address without spelling it out.
fn mask(email: &str) -> String {
    match email.split_once('@') {
        Some((local, domain)) => {
            let first: String = local.chars().take(1).collect();
            format!("{first}••@{domain}")
        }
        None => "your address".to_owned(),
    }
}

fn line(line: &Line) -> String {
    let name = escape(line.name);
    let value = escape(&line.value);
    match &line.label {
        Some(label) => format!(
            "<p>{}: <strong id=\"{name}\">{value}</strong></p>",
            escape(label)
        ),
        None => format!("<p id=\"{name}\">{value}</p>"),
    }
}

/// The page of an object that can be decided. `base` is the path it was loaded from: its
/// steps are posted under it.
pub fn render(page: &Page, base: &str, nonce: &str) -> String {
    let shown = &page.shown;
    let script = steps_script(nonce);
    let title = escape(&shown.title);
    let requester = shown
        .requester
        .as_deref()
        .map(|requester| format!("<p class=\"requester\">{}</p>\n", escape(requester)))
        .unwrap_or_default();
    let lines: String = shown.lines.iter().map(line).collect::<Vec<_>>().join("\n");
    let notes: String = shown
        .notes
        .iter()
        .map(|note| format!("<p class=\"note\">{}</p>\n", escape(note)))
        .collect();
    // Who confirms: the recipient the object names, or a visitor who says who they are.
    let (who, passkey_intro) = match &page.recipient {
        Some(email) => (
            format!(
                "<p>First, confirm it is you: we email a 6-digit code to {}.</p>",
                escape(&mask(email.as_str()))
            ),
            "Then confirm",
        ),
        None => (
            "<p><label>Your email address <input id=\"email\" type=\"email\" \
             autocomplete=\"email\"></label></p>"
                .to_owned(),
            "Confirm",
        ),
    };
    let (viewer_style, document) = if page.has_document {
        (
            "\n#viewer{width:100%;height:60vh;border:1px solid #d0d4dc;border-radius:8px}",
            "<iframe id=\"viewer\" title=\"The document\" hidden></iframe>\n\
             <p><a id=\"document\" hidden target=\"_blank\" rel=\"noopener\">Open the document \
             in a new tab</a></p>\n",
        )
    } else {
        ("", "")
    };
    let passkey = if page.passkey_required {
        "required"
    } else {
        "none"
    };
    let words = &shown.words;
    let (question, approve, reject) = (
        escape(&words.question),
        escape(&words.approve),
        escape(&words.reject),
    );
    let (approved, declined) = (escape(&words.approved), escape(&words.declined));
    let base = escape(base);
    let page_hash = escape(&page.hash);
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>{title}</title>
<style nonce="{nonce}">{STEPS_STYLE}{viewer_style}</style>
</head>
<body>
<main id="steps" data-base="{base}" data-context-hash="{page_hash}" data-passkey="{passkey}" data-approved="{approved}" data-declined="{declined}">
{requester}<h1>{title}</h1>
{lines}
{notes}<section id="step-code">
{who}
<button id="send">Email me a code</button>
<p><label>Code <input id="code" inputmode="numeric" autocomplete="one-time-code" maxlength="6"></label>
<button id="verify">Confirm</button></p>
</section>
{document}<section id="step-passkey" hidden>
<p>{passkey_intro} with a passkey on this device (fingerprint, face or screen lock).</p>
<button id="passkey">Use a passkey</button>
</section>
<section id="step-decide" hidden>
<p>{question}</p>
<button id="approve">{approve}</button>
<button id="reject" class="secondary">{reject}</button>
</section>
<p id="status" role="status" aria-live="polite"></p>
<button id="reload" hidden>Reload the page</button>
</main>
{script}
</body>
</html>
"#
    )
}

/// The page of an object that can no longer be decided: what it is now.
pub fn render_closed(status: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Nothing to decide</title></head><body><main><h1>Nothing to decide</h1>\
         <p id=\"closed\">{}.</p></main></body></html>\n",
        escape(status)
    )
}

#[cfg(test)]
mod tests {
    use idconsent_approval::{Shown, Words};
    use idconsent_kernel::EmailAddress;

    use super::*;

    fn page(recipient: Option<&str>) -> Page {
        Page {
            shown: Shown {
                title: "Authorise <a> direct debit".into(),
                requester: Some("Members · Gym \"Co\"".into()),
                lines: vec![
                    Line::plain("description", "Rent, flat 3"),
                    Line::labelled("terms", "Terms", "up to 120 EUR, monthly"),
                ],
                notes: vec!["Sandbox".into()],
                words: Words::approve_or_decline("mandate"),
            },
            hash: "ab".repeat(32),
            passkey_required: true,
            recipient: recipient.map(|email| EmailAddress::parse(email).unwrap()),
            has_document: false,
        }
    }

    #[test]
    fn the_page_shows_the_targets_words_escaped_and_masks_the_recipient() {
        let html = render(&page(Some("ann@example.com")), "/mandates/md_1", "n0nce");
        assert!(html.contains("<title>Authorise &lt;a&gt; direct debit</title>"));
        assert!(html.contains("Members · Gym &quot;Co&quot;"));
        assert!(html.contains("<strong id=\"terms\">up to 120 EUR, monthly</strong>"));
        assert!(html.contains("<p id=\"description\">Rent, flat 3</p>"));
        assert!(html.contains("a••@example.com"));
        assert!(!html.contains("ann@example.com"));
        assert!(html.contains("data-passkey=\"required\""));
        assert!(html.contains("data-base=\"/mandates/md_1\""));
        assert!(!html.contains("id=\"email\""));
        assert!(!html.contains("id=\"viewer\""));
    }

    #[test]
    fn visitors_who_name_themselves_get_an_address_field_and_the_document() {
        let mut page = page(None);
        page.has_document = true;
        page.passkey_required = false;
        let html = render(&page, "/sign/sr_1", "n0nce");
        assert!(html.contains("id=\"email\""));
        assert!(html.contains("id=\"viewer\""));
        assert!(html.contains("data-passkey=\"none\""));
    }
}
