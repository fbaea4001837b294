/** The public door of mcp_servers/: the client hub. The bundled servers are run as processes, not imported. */
export * from "./hub/index.js";
