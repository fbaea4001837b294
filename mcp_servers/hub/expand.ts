/**
 * Variables in config strings: ours (`${VAR}`, `${VAR:-default}`) and the ones editors write in their MCP
 * files (`${env:VAR}`, `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${pathSeparator}`).
 * Anything else in `${…}` is an error naming it, never passed through literally to a server.
 */
import { homedir } from "node:os";
import { basename, sep } from "node:path";
import { z } from "zod";

export interface Expansion {
  env: NodeJS.ProcessEnv;
  /** What `${workspaceFolder}` stands for. */
  workspace: string;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `text` with its variables replaced; `fail` is told about each one that cannot be. */
export function expand(text: string, x: Expansion, fail: (message: string) => void): string {
  return text.replace(/\$\{([^}]*)\}/g, (whole, inner: string) => {
    const fixed = editorVariable(inner, x);
    if (fixed !== undefined) return fixed;
    const env = /^env:(.*)$/.exec(inner);
    if (env) return fromEnv(env[1]!, undefined, x, fail, `\${env:${env[1]}:-…}`);
    if (inner.startsWith("input:")) {
      fail(
        `${whole} is asked by VS Code when it starts the server; pda cannot ask it there: put the value in an environment variable and write \${env:NAME}`,
      );
      return "";
    }
    const ours = /^([^:]*)(?::-(.*))?$/.exec(inner);
    if (ours && NAME.test(ours[1]!)) return fromEnv(ours[1]!, ours[2], x, fail, `\${${ours[1]}:-default}`);
    fail(`unknown variable ${whole}`);
    return "";
  });
}

function editorVariable(name: string, x: Expansion): string | undefined {
  switch (name) {
    case "workspaceFolder":
    case "workspaceRoot":
      return x.workspace;
    case "workspaceFolderBasename":
      return basename(x.workspace);
    case "userHome":
      return homedir();
    case "pathSeparator":
    case "/":
      return sep;
    default:
      return undefined;
  }
}

function fromEnv(
  name: string,
  fallback: string | undefined,
  x: Expansion,
  fail: (message: string) => void,
  hint: string,
): string {
  const value = x.env[name];
  if (value !== undefined && value !== "") return value;
  if (fallback !== undefined) return fallback;
  fail(`environment variable ${name} is not set (write ${hint} for a default)`);
  return "";
}

/** A zod string whose variables are expanded; each that cannot be is an issue at the field's path. */
export function expanded(x: Expansion) {
  return z
    .string()
    .transform((text, ctx) => expand(text, x, (message) => ctx.addIssue({ code: "custom", message })));
}
