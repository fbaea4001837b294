#!/usr/bin/env node
/**
 * A test server whose tools need the client: `ask_model` asks the client's model through
 * `sampling/createMessage` and returns what it said (or the refusal's text, as a tool error); `picture` returns
 * an image content block (a 2×2 PNG) beside a caption, as a camera or a renderer would.
 */
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { serve } from "../common/serve.js";

/** A 2×2 PNG, red pixels. */
export const TINY_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAwMDAAAALAAH/1bN0KwAAAABJRU5ErkJggg==";

export function createSamplingServer(): McpServer {
  const server = new McpServer({ name: "pda-sampling-test", version: "0.1.0" });
  server.registerTool(
    "ask_model",
    {
      description: "Ask the client's model a question (MCP sampling) and return its answer.",
      inputSchema: { question: z.string() },
    },
    async ({ question }) => {
      try {
        const reply = await server.server.createMessage({
          messages: [{ role: "user", content: { type: "text", text: question } }],
          systemPrompt: "Answer in one short sentence.",
          maxTokens: 200,
        });
        const content = Array.isArray(reply.content) ? reply.content[0] : reply.content;
        const text = content?.type === "text" ? content.text : `(${content?.type ?? "no"} content)`;
        return {
          content: [{ type: "text" as const, text: JSON.stringify({ answer: text, model: reply.model }) }],
        };
      } catch (e) {
        return {
          isError: true,
          content: [{ type: "text" as const, text: `sampling failed: ${(e as Error).message}` }],
        };
      }
    },
  );
  server.registerTool("picture", { description: "A small picture of the scene, with a caption." }, () => ({
    content: [
      { type: "text" as const, text: "the scene from above" },
      { type: "image" as const, data: TINY_PNG, mimeType: "image/png" },
    ],
  }));
  return server;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await serve(createSamplingServer);
