import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "coverage/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The UI's front end: plain ES modules run by the browser.
    files: ["ui/public/**/*.js"],
    languageOptions: {
      globals: Object.fromEntries(
        [
          "document",
          "window",
          "location",
          "fetch",
          "EventSource",
          "URLSearchParams",
          "FormData",
          "Node",
          "setTimeout",
        ].map((name) => [name, "readonly"]),
      ),
    },
  },
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "off",
    },
  },
);
