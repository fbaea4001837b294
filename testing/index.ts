/** Test doubles that are part of the product: fake model servers, a fake clock. */
export * from "./fake-gemini.js";
export * from "./clock.js";
export * from "./values.js";
export * from "./fake-openai.js";
export * from "./openai-rules.js";
export * from "./fake-anthropic.js";
export * from "./anthropic-rules.js";
