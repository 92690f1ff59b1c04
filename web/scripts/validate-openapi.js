// Validates each OpenAPI document named on the command line as OpenAPI 3.1
// with an independent validator (its JSON Schema and $ref checks), plus the
// one rule of the specification a JSON Schema cannot express: every
// operationId is unique. Exits 1 on the first document with any error.
import { Validator } from "@seriousme/openapi-schema-validator";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** Every operationId used more than once in `spec`. */
function duplicateOperationIds(spec) {
  const ids = Object.values(spec.paths ?? {})
    .flatMap((item) => METHODS.map((method) => item[method]?.operationId))
    .filter((id) => id !== undefined);
  return [...new Set(ids.filter((id, i) => ids.indexOf(id) !== i))];
}

/** The problems of one document; empty when it is valid OpenAPI 3.1. */
async function problemsOf(file) {
  const validator = new Validator();
  const result = await validator.validate(file);
  if (!result.valid) return [JSON.stringify(result.errors, null, 2)];
  if (validator.version !== "3.1") return [`OpenAPI ${validator.version}, expected 3.1`];
  return duplicateOperationIds(validator.specification).map(
    (id) => `operationId "${id}" is used more than once`,
  );
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: validate-openapi.js <document.json>...");
  process.exit(2);
}
for (const file of files) {
  const problems = await problemsOf(file);
  if (problems.length > 0) {
    console.error(`${file} is not a valid OpenAPI 3.1 document:\n${problems.join("\n")}`);
    process.exit(1);
  }
  console.log(`${file}: valid OpenAPI 3.1`);
}
