/**
 * zod's settings for a `pda` process: imported for its effect, first, by the CLI before any command's module
 * (cli/commands/index.ts) and by each bundled MCP server's entry. Not part of core's index: a program that uses
 * pda as a library keeps the settings it chose.
 *
 * jitless: an object schema otherwise generates its own parser (`new Function`) at its first parse. A `pda`
 * process parses most of its schemas a few times (a config file, a model's answer, a protocol message), so the
 * generated code costs more than it saves: ~60–90 ms of the main thread and ~30 ms of V8's compiler threads in
 * a scripted `pda run`, ~30 ms of a server's start (#16); a batch spends well under 1 % of its CPU in zod
 * either way. The setting is read when a schema is built, so it must come before the modules that build them
 * (pda's and the MCP SDK's).
 */
import { z } from "zod";

z.config({ jitless: true });
