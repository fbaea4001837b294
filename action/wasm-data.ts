/**
 * Where a WebAssembly module's initialised data ends in its linear memory, read from the binary's data section
 * (the highest offset + size of its active segments with a constant offset). The memory image (image.ts) copies
 * everything up to there (plus a margin for zero-initialised data) and can then leave out the C stack above it.
 * Undefined when the binary has a segment it cannot place (a passive one, or an offset that is not a constant):
 * the image then copies the stack too, which is slower but as correct.
 */

const DATA_SECTION = 11;
const I32_CONST = 0x41;
const END = 0x0b;

class Reader {
  constructor(
    private readonly bytes: Uint8Array,
    public pos: number,
  ) {}

  /** An unsigned LEB128. */
  u32(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const byte = this.bytes[this.pos++];
      if (byte === undefined) throw new RangeError("truncated WebAssembly binary");
      result += (byte & 0x7f) * 2 ** shift;
      if (!(byte & 0x80)) return result;
      shift += 7;
    }
  }

  /** A signed LEB128 (i32.const's immediate). */
  i32(): number {
    let result = 0;
    let shift = 0;
    let byte: number;
    do {
      const next = this.bytes[this.pos++];
      if (next === undefined) throw new RangeError("truncated WebAssembly binary");
      byte = next;
      result |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    return shift < 32 && byte & 0x40 ? result | (~0 << shift) : result;
  }

  byte(): number {
    const b = this.bytes[this.pos++];
    if (b === undefined) throw new RangeError("truncated WebAssembly binary");
    return b;
  }
}

export function dataEnd(binary: Uint8Array): number | undefined {
  const r = new Reader(binary, 8); // after the magic number and version
  while (r.pos < binary.length) {
    const id = r.byte();
    const size = r.u32();
    const next = r.pos + size;
    if (id === DATA_SECTION) {
      let end = 0;
      for (let n = r.u32(); n > 0; n--) {
        const flags = r.u32();
        if (flags === 2) r.u32(); // an explicit memory index
        if (flags === 1) return undefined; // passive: placed at run time
        if (r.byte() !== I32_CONST) return undefined;
        const offset = r.i32() >>> 0;
        if (r.byte() !== END) return undefined;
        const length = r.u32();
        r.pos += length;
        end = Math.max(end, offset + length);
      }
      return end;
    }
    r.pos = next;
  }
  return 0;
}
