/**
 * Pictures in a step's result (MCP `image` content blocks, e.g. a simulator's render) go to the model as image
 * parts, not as base64 text: each block in the value is replaced by a short placeholder naming it, and its
 * data is handed on beside the prompt (GenerateRequest.images). A model that takes no images sees the
 * placeholder only.
 */
import type { ImagePart } from "../core/index.js";

/** At most this many pictures per prompt, and this much base64 in all: the rest are placeholders only. */
export const MAX_IMAGES = 4;
export const MAX_IMAGE_BASE64 = 8 << 20;

interface ImageBlock {
  type: "image";
  data: string;
  mimeType: string;
}

function isImageBlock(v: unknown): v is ImageBlock {
  if (v === null || typeof v !== "object") return false;
  const b = v as Partial<ImageBlock>;
  return b.type === "image" && typeof b.data === "string" && typeof b.mimeType === "string";
}

/** The value with each image block as a placeholder string, and the pictures that are attached. */
export function takeImages(value: unknown): { value: unknown; images: ImagePart[] } {
  const images: ImagePart[] = [];
  let seen = 0;
  let budget = MAX_IMAGE_BASE64;
  const walk = (v: unknown, depth: number): unknown => {
    if (isImageBlock(v)) {
      seen += 1;
      const kb = Math.ceil((v.data.length * 3) / 4 / 1024);
      const attach = images.length < MAX_IMAGES && v.data.length <= budget;
      if (attach) {
        images.push({ mimeType: v.mimeType, data: v.data });
        budget -= v.data.length;
        return `[image ${images.length}: ${v.mimeType}, ${kb} KB, attached]`;
      }
      return `[image: ${v.mimeType}, ${kb} KB, not attached (${seen > MAX_IMAGES ? "too many images" : "too large"})]`;
    }
    // Results are JSON from the sandbox; the depth bound only guards against pathological nesting.
    if (v === null || typeof v !== "object" || depth > 32) return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, depth + 1)]));
  };
  const out = walk(value, 0);
  return { value: seen > 0 ? out : value, images };
}
