// GraphQL Code Generator: TypeScript types of schema.graphql and of the
// operations the dashboard sends (`/* GraphQL */` strings in its source).
import type { CodegenConfig } from "@graphql-codegen/cli";

const config: CodegenConfig = {
  schema: "../schema.graphql",
  documents: ["dashboard/*.js"],
  generates: {
    "generated/graphql/": {
      preset: "client",
      config: {
        // Documents as typed strings, ready for a plain `fetch`.
        documentMode: "string",
        // A new scalar must get a type here instead of silently becoming `any`.
        strictScalars: true,
        scalars: {
          Attributes: "Record<string, string | boolean>",
          DateTime: "string",
          JSON: "unknown",
          UUID: "string",
        },
      },
    },
  },
};

export default config;
