import { expect, it } from "vitest";
import { MAX_IMAGES, MAX_IMAGE_BASE64, takeImages } from "../images.js";

const image = (data: string) => ({ type: "image", data, mimeType: "image/png" });

it("replaces image blocks anywhere in a value by placeholders and hands their data on", () => {
  const value = { caption: "top", views: [{ type: "text", text: "a" }, image("AAAA")] };
  expect(takeImages(value)).toEqual({
    value: { caption: "top", views: [{ type: "text", text: "a" }, "[image 1: image/png, 1 KB, attached]"] },
    images: [{ mimeType: "image/png", data: "AAAA" }],
  });
});

it("leaves a value without images as it is (the same object)", () => {
  const value = { type: "image", data: 3 };
  expect(takeImages(value).value).toBe(value);
  expect(takeImages(value).images).toEqual([]);
});

it("attaches at most MAX_IMAGES pictures and MAX_IMAGE_BASE64 of data; the rest are placeholders only", () => {
  const many = Array.from({ length: MAX_IMAGES + 1 }, () => image("AAAA"));
  const out = takeImages(many);
  expect(out.images).toHaveLength(MAX_IMAGES);
  expect((out.value as string[])[MAX_IMAGES]).toContain("not attached (too many images)");

  const big = takeImages([image("A".repeat(MAX_IMAGE_BASE64 + 4))]);
  expect(big.images).toEqual([]);
  expect((big.value as string[])[0]).toContain("not attached (too large)");
});
