//! Real responses checked against the OpenAPI documents the service serves.

use serde_json::{Value, json};

/// Asserts `body` matches what `doc` says `method template` answers with `status`.
pub fn validate_operation(doc: &Value, method: &str, template: &str, status: u16, body: &Value) {
    let schema = &doc["paths"][template][method]["responses"][status.to_string()]["content"]["application/json"]
        ["schema"];
    assert!(
        schema.is_object(),
        "the document describes {status} of GET {template}"
    );
    let root = json!({ "$schema": "https://json-schema.org/draft/2020-12/schema", "allOf": [schema], "components": doc["components"] });
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&root)
        .expect("valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "GET {template} ({status}) breaks the document: {errors:#?}\n{body}"
    );
}
