/**
 * Paths inside the document folder. Containment is checked on real paths, with every symbolic link resolved
 * (the file, a folder on the way, the root itself): a lexical check alone let a link in the folder read
 * /etc/shadow. Files are opened without following a final link and must be regular files, so a file swapped
 * for a link after the check is not followed and a FIFO cannot hang a read.
 */
import { constants } from "node:fs";
import { open, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

export class DocumentError extends Error {}

/** A path named by a caller, checked to lie inside the folder. */
export interface Located {
  /** Relative to the root as named (links not resolved), with forward slashes: the index's key. */
  rel: string;
  /** The real absolute path (links resolved), inside the root's real path. */
  real: string;
}

function within(root: string, abs: string): boolean {
  const rel = relative(root, abs);
  return rel !== "" && rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

/** The real path of `abs`; for a path that does not exist, its deepest existing ancestor's real path + the rest. */
async function realPath(abs: string): Promise<string> {
  const rest: string[] = [];
  for (let head = abs; ; head = dirname(head)) {
    try {
      return join(await realpath(head), ...rest);
    } catch (e) {
      if (code(e) !== "ENOENT" && code(e) !== "ENOTDIR") throw e;
      if (dirname(head) === head) return abs;
      rest.unshift(basename(head));
    }
  }
}

/** Locate `path` (relative to `root`, or absolute); throws DocumentError when it is, or leads, outside. */
export async function locate(root: string, path: string): Promise<Located> {
  const abs = isAbsolute(path) ? resolve(path) : resolve(root, path);
  if (!within(root, abs)) throw new DocumentError(`${path} is outside the document folder ${root}`);
  let real: string;
  let realRoot: string;
  try {
    [real, realRoot] = await Promise.all([realPath(abs), realPath(root)]);
  } catch (e) {
    throw new DocumentError(`${path}: ${(e as Error).message}`);
  }
  if (!within(realRoot, real)) {
    throw new DocumentError(
      `${path} is a symbolic link (or lies under one) that leads outside the document folder ${root}`,
    );
  }
  return { rel: relative(root, abs).split(sep).join("/"), real };
}

/** The bytes of a located file. `name` is how errors call it. */
export async function readLocated(real: string, name: string): Promise<Buffer> {
  let file;
  try {
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; harmless for regular files.
    file = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const why =
      code(e) === "ENOENT"
        ? "no such document"
        : code(e) === "ELOOP"
          ? "is a symbolic link, which is not followed here"
          : (e as Error).message;
    throw new DocumentError(`${name}: ${why}`);
  }
  try {
    if (!(await file.stat()).isFile()) throw new DocumentError(`${name} is not a regular file`);
    return await file.readFile();
  } finally {
    await file.close();
  }
}

/** Locate and read in one go. */
export async function readInside(root: string, path: string): Promise<Located & { bytes: Buffer }> {
  const located = await locate(root, path);
  return { ...located, bytes: await readLocated(located.real, path) };
}
