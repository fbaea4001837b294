#!/usr/bin/env node
/**
 * The person's browser in the conformance suite's auth scenarios (PDA_BROWSER): opens the authorization URL
 * it is given and follows the redirects, as a browser would after the person clicks "allow" (the suite's
 * authorization server allows at once), which brings the code to pda's loopback callback.
 */
const url = process.argv.at(-1);
if (!url) {
  process.stderr.write("conformance browser: no URL\n");
  process.exitCode = 2;
} else {
  const res = await fetch(url, { redirect: "follow" });
  await res.body?.cancel();
  if (!res.ok) {
    process.stderr.write(`conformance browser: ${url} ended at ${res.url} with ${res.status}\n`);
    process.exitCode = 1;
  }
}
