/** `node --import <this>` before the conformance suite's CLI on Node < 22 (fs-hooks.ts says why). */
import { register } from "node:module";

register("./fs-hooks.js", import.meta.url);
