//! `/docs`: a self-contained HTML reference rendered from the OpenAPI document, so it can never
//! drift from the routes and needs nothing from a CDN.

use std::fmt::Write;

use serde_json::Value;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

pub fn render(document: &Value) -> String {
    let mut html = String::with_capacity(64 * 1024);
    let title = text(&document["info"]["title"]);
    let version = text(&document["info"]["version"]);
    let _ = write!(
        html,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} reference</title><style>{STYLE}</style></head><body>\
         <header><h1>{title} <small>{version}</small></h1><p>{}</p>\
         <p>Machine-readable: <a href=\"/openapi.json\">/openapi.json</a> (OpenAPI 3.1)</p></header><main>",
        escape(&text(&document["info"]["description"]))
    );

    let mut tags: Vec<(String, String)> = document["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tag| (text(&tag["name"]), text(&tag["description"])))
        .collect();
    for (_, item) in paths(document) {
        for method in METHODS {
            for tag in item[method]["tags"].as_array().into_iter().flatten() {
                let name = text(tag);
                if !tags.iter().any(|(known, _)| *known == name) {
                    tags.push((name, String::new()));
                }
            }
        }
    }

    html.push_str("<nav><h2>Contents</h2><ul>");
    for (tag, _) in &tags {
        let _ = write!(html, "<li><a href=\"#tag-{0}\">{0}</a></li>", escape(tag));
    }
    html.push_str("<li><a href=\"#schemas\">schemas</a></li></ul></nav>");

    for (tag, description) in &tags {
        let _ = write!(
            html,
            "<section id=\"tag-{0}\"><h2>{0}</h2><p>{1}</p>",
            escape(tag),
            escape(description)
        );
        for (path, item) in paths(document) {
            for method in METHODS {
                let operation = &item[method];
                let tagged = operation["tags"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| text(t) == *tag));
                if tagged {
                    render_operation(&mut html, method, path, operation);
                }
            }
        }
        html.push_str("</section>");
    }

    html.push_str("<section id=\"schemas\"><h2>Schemas</h2>");
    if let Some(schemas) = document["components"]["schemas"].as_object() {
        for (name, schema) in schemas {
            render_schema(&mut html, name, schema);
        }
    }
    html.push_str("</section></main></body></html>");
    html
}

fn paths(document: &Value) -> impl Iterator<Item = (&String, &Value)> {
    document["paths"].as_object().into_iter().flatten()
}

fn render_operation(html: &mut String, method: &str, path: &str, operation: &Value) {
    let _ = write!(
        html,
        "<article class=\"op\"><h3><span class=\"m {method}\">{}</span> <code>{}</code></h3>",
        method.to_uppercase(),
        escape(path)
    );
    for key in ["summary", "description"] {
        let value = text(&operation[key]);
        if !value.is_empty() {
            let _ = write!(html, "<p>{}</p>", escape(&value));
        }
    }
    if let Some(security) = operation["security"].as_array() {
        let schemes: Vec<String> = security
            .iter()
            .filter_map(Value::as_object)
            .flat_map(|scheme| scheme.keys().cloned())
            .collect();
        if !schemes.is_empty() {
            let _ = write!(
                html,
                "<p class=\"auth\">Authentication: {}</p>",
                escape(&schemes.join(", "))
            );
        }
    }
    if let Some(parameters) = operation["parameters"].as_array().filter(|p| !p.is_empty()) {
        html.push_str(
            "<table><tr><th>parameter</th><th>in</th><th>required</th><th>description</th></tr>",
        );
        for parameter in parameters {
            let _ = write!(
                html,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&text(&parameter["name"])),
                escape(&text(&parameter["in"])),
                if parameter["required"].as_bool() == Some(true) {
                    "yes"
                } else {
                    "no"
                },
                escape(&text(&parameter["description"]))
            );
        }
        html.push_str("</table>");
    }
    if let Some(content) = operation["requestBody"]["content"].as_object() {
        for (media, body) in content {
            let _ = write!(
                html,
                "<p>Request body (<code>{}</code>): {}</p>",
                escape(media),
                schema_name(&body["schema"])
            );
        }
    }
    if let Some(responses) = operation["responses"].as_object() {
        html.push_str("<table><tr><th>status</th><th>meaning</th><th>body</th></tr>");
        for (status, response) in responses {
            let body = response["content"]
                .as_object()
                .and_then(|content| content.values().next())
                .map(|media| schema_name(&media["schema"]))
                .unwrap_or_default();
            let _ = write!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{body}</td></tr>",
                escape(status),
                escape(&text(&response["description"]))
            );
        }
        html.push_str("</table>");
    }
    html.push_str("</article>");
}

fn render_schema(html: &mut String, name: &str, schema: &Value) {
    let _ = write!(
        html,
        "<article class=\"schema\" id=\"schema-{0}\"><h3>{0}</h3>",
        escape(name)
    );
    let description = text(&schema["description"]);
    if !description.is_empty() {
        let _ = write!(html, "<p>{}</p>", escape(&description));
    }
    if let Some(properties) = schema["properties"].as_object() {
        let required: Vec<String> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect();
        html.push_str(
            "<table><tr><th>field</th><th>type</th><th>required</th><th>description</th></tr>",
        );
        for (field, property) in properties {
            let _ = write!(
                html,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(field),
                schema_name(property),
                if required.contains(field) {
                    "yes"
                } else {
                    "no"
                },
                escape(&text(&property["description"]))
            );
        }
        html.push_str("</table>");
    } else if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values.iter().map(text).collect();
        let _ = write!(
            html,
            "<p>One of: <code>{}</code></p>",
            escape(&values.join(", "))
        );
    }
    html.push_str("</article>");
}

/// A short, linked description of a schema: `Envelope_Health`, `array of Device`, `string`.
fn schema_name(schema: &Value) -> String {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return format!("<a href=\"#schema-{0}\">{0}</a>", escape(name));
    }
    if let Some(variants) = schema["oneOf"].as_array().or(schema["anyOf"].as_array()) {
        let names: Vec<String> = variants.iter().map(schema_name).collect();
        return names.join(" or ");
    }
    match &schema["type"] {
        Value::String(kind) if kind == "array" => {
            format!("array of {}", schema_name(&schema["items"]))
        }
        Value::String(kind) => {
            let format = text(&schema["format"]);
            if format.is_empty() {
                escape(kind)
            } else {
                format!("{} ({})", escape(kind), escape(&format))
            }
        }
        Value::Array(kinds) => kinds.iter().map(text).collect::<Vec<_>>().join(" | "),
        _ => String::new(),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2330}\
header{background:#0f2a44;color:#fff;padding:1.5rem 2rem}header a{color:#9cd1ff}\
header small{font-weight:normal;opacity:.7}main{max-width:70rem;margin:0 auto;padding:1rem 2rem}\
nav ul{columns:3}h2{border-bottom:2px solid #dde3ea;padding-bottom:.3rem;margin-top:2.5rem}\
.op,.schema{border:1px solid #dde3ea;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}\
.op h3,.schema h3{margin:.3rem 0;font-size:1rem}.m{display:inline-block;min-width:4.5rem;text-align:center;\
border-radius:4px;color:#fff;padding:0 .4rem;font-size:.8rem}.get{background:#2f7d32}.post{background:#1565c0}\
.put{background:#8e6c00}.patch{background:#6a1b9a}.delete{background:#b71c1c}\
table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border:1px solid #e3e8ee;padding:.25rem .5rem;\
text-align:left;vertical-align:top}th{background:#f5f7fa}code{font-size:.9em}.auth{color:#5b6472}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_operations_and_escapes_text() {
        let document = serde_json::json!({
            "info": {"title": "idconsent API", "version": "1.0", "description": "<b>x</b>"},
            "tags": [{"name": "system", "description": "Health"}],
            "paths": {"/healthz": {"get": {"tags": ["system"], "summary": "Liveness",
                "responses": {"200": {"description": "alive",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}}}}}},
            "components": {"schemas": {"Health": {"type": "object", "required": ["status"],
                "properties": {"status": {"type": "string", "description": "ok"}}}}}
        });
        let html = render(&document);
        assert!(html.contains("<code>/healthz</code>"));
        assert!(html.contains("href=\"#schema-Health\""));
        assert!(html.contains("&lt;b&gt;x&lt;/b&gt;"));
        assert!(!html.contains("<b>x</b>"));
    }
}
