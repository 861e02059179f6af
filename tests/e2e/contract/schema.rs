//! Reads the schemas of `/openapi.json` the way a client generator would.
//!
//! [`mismatches`] checks a body against its documented schema: the subset of JSON Schema utoipa
//! writes (`$ref`, `type`, `properties`, `required`, `additionalProperties`, `items`,
//! `oneOf`/`anyOf`/`allOf`, `enum`, `const`, `format: date-time`). It is stricter than JSON
//! Schema in one way: an object schema with `properties` refuses fields it does not name, unless
//! it says `additionalProperties`, so a field added to a body without its documentation fails.
//!
//! [`untyped_objects`] lists where a response schema says "some object" without saying which.

use std::collections::BTreeSet;

use idconsent_kernel::Timestamp;
use serde_json::Value;

/// Every way `body` differs from `schema`, with the path to the field (`$.data.status`).
pub fn mismatches(document: &Value, schema: &Value, body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    check(document, schema, body, "$", &mut found);
    found
}

fn resolve<'a>(document: &'a Value, reference: &str) -> Option<&'a Value> {
    let name = reference.strip_prefix("#/components/schemas/")?;
    document.get("components")?.get("schemas")?.get(name)
}

fn types_of(schema: &Value) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Value::String(one) => Some(vec![one.as_str()]),
        Value::Array(many) => Some(many.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

fn is_of_type(value: &Value, kind: &str) -> bool {
    match kind {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

fn check(document: &Value, schema: &Value, value: &Value, at: &str, found: &mut Vec<String>) {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        match resolve(document, reference) {
            Some(target) => check(document, target, value, at, found),
            None => found.push(format!("{at}: cannot resolve {reference}")),
        }
        return;
    }
    for part in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        check(document, part, value, at, found);
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(options) = schema.get(keyword).and_then(Value::as_array) {
            let fits = options.iter().any(|option| {
                let mut scratch = Vec::new();
                check(document, option, value, at, &mut scratch);
                scratch.is_empty()
            });
            if !fits {
                found.push(format!("{at}: {value} fits none of its {keyword} schemas"));
            }
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        found.push(format!("{at}: {value} is not one of {allowed:?}"));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        found.push(format!("{at}: {value} is not {constant}"));
    }
    if let Some(types) = types_of(schema)
        && !types.iter().any(|kind| is_of_type(value, kind))
    {
        found.push(format!(
            "{at}: {value} is not of type {}",
            types.join(" or ")
        ));
        return;
    }
    if schema.get("format").and_then(Value::as_str) == Some("date-time")
        && let Some(text) = value.as_str()
        && Timestamp::parse_rfc3339(text).is_err()
    {
        found.push(format!("{at}: {text:?} is not an RFC 3339 time"));
    }
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !fields.contains_key(name) {
                    found.push(format!("{at}.{name}: required, absent"));
                }
            }
            let additional = schema.get("additionalProperties");
            for (name, field) in fields {
                let path = format!("{at}.{name}");
                match (properties.and_then(|p| p.get(name)), additional) {
                    (Some(documented), _) => check(document, documented, field, &path, found),
                    (None, Some(Value::Bool(true))) => {}
                    (None, Some(each @ Value::Object(_))) => {
                        check(document, each, field, &path, found);
                    }
                    (None, _) if properties.is_some() => {
                        found.push(format!("{path}: present, not documented"));
                    }
                    // No `properties` at all: an untyped object (see `untyped_objects`).
                    (None, _) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(each) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    check(document, each, item, &format!("{at}[{index}]"), found);
                }
            }
        }
        _ => {}
    }
}

/// Where a JSON response's schema (or a schema it reaches) is an object of unknown shape: no
/// `properties`, no typed `additionalProperties`, no composition — or no schema at all. Named
/// `Component.field` inside components, `METHOD /path status` plus field path for inline ones.
pub fn untyped_objects(document: &Value) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut visited = BTreeSet::new();
    let Some(paths) = document.get("paths").and_then(Value::as_object) else {
        return found;
    };
    for (path, item) in paths {
        let Some(operations) = item.as_object() else {
            continue;
        };
        for (method, operation) in operations {
            let responses = operation.get("responses").and_then(Value::as_object);
            for (status, response) in responses.into_iter().flatten() {
                let Some(json) = response
                    .get("content")
                    .and_then(|content| content.get("application/json"))
                else {
                    continue;
                };
                let label = format!("{} {path} {status}", method.to_uppercase());
                match json.get("schema") {
                    Some(schema) => visit(document, schema, &label, &mut visited, &mut found),
                    None => {
                        found.insert(label);
                    }
                }
            }
        }
    }
    found
}

fn visit(
    document: &Value,
    schema: &Value,
    label: &str,
    visited: &mut BTreeSet<String>,
    found: &mut BTreeSet<String>,
) {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference
            .trim_start_matches("#/components/schemas/")
            .to_owned();
        if visited.insert(name.clone())
            && let Some(target) = resolve(document, reference)
        {
            visit(document, target, &name, visited, found);
        }
        return;
    }
    let mut composed = false;
    for keyword in ["allOf", "oneOf", "anyOf"] {
        for part in schema
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            composed = true;
            visit(document, part, label, visited, found);
        }
    }
    if composed || schema.get("enum").is_some() || schema.get("const").is_some() {
        return;
    }
    if let Some(items) = schema.get("items") {
        visit(document, items, &format!("{label}[]"), visited, found);
    }
    let types = types_of(schema);
    let may_be_object = types.as_ref().is_none_or(|types| types.contains(&"object"));
    if !may_be_object {
        return;
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, property) in properties.into_iter().flatten() {
        visit(
            document,
            property,
            &format!("{label}.{name}"),
            visited,
            found,
        );
    }
    let additional = schema.get("additionalProperties");
    if let Some(each @ Value::Object(_)) = additional {
        visit(document, each, &format!("{label}.*"), visited, found);
    }
    let typed_map = matches!(additional, Some(Value::Object(each)) if !each.is_empty());
    let closed = additional == Some(&Value::Bool(false));
    if properties.is_none_or(|p| p.is_empty()) && !typed_map && !closed {
        found.insert(label.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn document() -> Value {
        json!({
            "paths": {
                "/things": {"get": {"responses": {
                    "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
                    "500": {"content": {"application/json": {"schema": {"type": "object"}}}}
                }}}
            },
            "components": {"schemas": {
                "Thing": {
                    "type": "object",
                    "required": ["id", "at"],
                    "properties": {
                        "id": {"type": "string"},
                        "at": {"type": "string", "format": "date-time"},
                        "count": {"type": ["integer", "null"]},
                        "extra": {},
                        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                        "kind": {"oneOf": [{"type": "null"}, {"type": "string", "enum": ["a", "b"]}]}
                    }
                }
            }}
        })
    }

    #[test]
    fn bodies_are_checked_against_their_schema() {
        let document = document();
        let schema = json!({"$ref": "#/components/schemas/Thing"});
        let fine = json!({"id": "x", "at": "2026-11-24T20:44:00.000Z", "count": null, "tags": {"a": "b"}, "kind": "a"});
        assert_eq!(mismatches(&document, &schema, &fine), Vec::<String>::new());
        let wrong =
            json!({"at": "yesterday", "count": 1.5, "tags": {"a": 1}, "kind": "c", "new": true});
        let mut found = mismatches(&document, &schema, &wrong);
        found.sort();
        assert_eq!(
            found,
            [
                "$.at: \"yesterday\" is not an RFC 3339 time",
                "$.count: 1.5 is not of type integer or null",
                "$.id: required, absent",
                "$.kind: \"c\" fits none of its oneOf schemas",
                "$.new: present, not documented",
                "$.tags.a: 1 is not of type string",
            ]
        );
    }

    #[test]
    fn untyped_objects_are_found_with_their_place() {
        let found: Vec<String> = untyped_objects(&document()).into_iter().collect();
        assert_eq!(found, ["GET /things 500", "Thing.extra"]);
    }
}
