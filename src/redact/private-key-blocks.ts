/**
 * PEM private key blocks (`-----BEGIN … PRIVATE KEY-----` … `-----END … PRIVATE KEY-----`),
 * replaced whole; a block whose END line is missing (a cut body, one chunk of a stream) loses
 * its header and the base64 that follows.
 *
 * @note Hand-scanned rather than one regex: a lazy `[\s\S]*?` up to the END line costs the
 * distance to the next END for every BEGIN, which is quadratic on text full of BEGIN lines
 * with no END. Here the next END position is found once and reused, so the scan is linear.
 */
import { REDACTED } from './redacted-marker.js'

// Label between BEGIN/END and PRIVATE KEY: `RSA `, `EC `, `OPENSSH `, `ENCRYPTED `, `PGP `.
// Case-sensitive and without `-` (RFC 7468 labels are uppercase), so a label can never run
// across one block's END line into the next block's BEGIN line.
const BEGIN_LINE = /-----BEGIN[ A-Z0-9_]{0,100}PRIVATE KEY(?: BLOCK)?-----/y
const END_LINE = /-----END[ A-Z0-9_]{0,100}PRIVATE KEY(?: BLOCK)?-----/y

// What may follow a header when the END line is missing: base64, line breaks (raw or
// JSON-escaped) and the `Proc-Type:`/`DEK-Info:` headers of encrypted keys.
const BLOCK_BODY = /[A-Za-z0-9+/=\s\\:,-]*/y

// A block body longer than this is not a key (RSA 16384-bit PKCS#8 is about 13 KB).
const MAX_BLOCK_CHARS = 65536

/** Replace every PEM private key block in `text` (by `mask(block)`, default `[REDACTED]`). */
export function redactPrivateKeyBlocks(text: string, mask: (secret: string) => string = () => REDACTED): string {
  if (!text.includes('-----BEGIN')) return text
  let out = ''
  let copied = 0
  let searchFrom = 0
  // Position of the next `-----END` at or after the current block (-1: none left).
  let nextEnd = -2
  for (;;) {
    const begin = text.indexOf('-----BEGIN', searchFrom)
    if (begin < 0) break
    BEGIN_LINE.lastIndex = begin
    if (!BEGIN_LINE.test(text)) {
      searchFrom = begin + 1
      continue
    }
    const bodyStart = BEGIN_LINE.lastIndex
    if (nextEnd !== -1 && nextEnd < bodyStart) nextEnd = text.indexOf('-----END', bodyStart)
    let blockEnd = -1
    // Skip END lines that are not private-key END lines (a certificate's) within reach.
    while (nextEnd >= 0 && nextEnd - bodyStart <= MAX_BLOCK_CHARS) {
      END_LINE.lastIndex = nextEnd
      if (END_LINE.test(text)) {
        blockEnd = END_LINE.lastIndex
        break
      }
      nextEnd = text.indexOf('-----END', nextEnd + 1)
    }
    if (blockEnd < 0) {
      BLOCK_BODY.lastIndex = bodyStart
      BLOCK_BODY.test(text)
      blockEnd = BLOCK_BODY.lastIndex
    }
    out += text.slice(copied, begin) + mask(text.slice(begin, blockEnd))
    copied = blockEnd
    searchFrom = blockEnd
  }
  return out + text.slice(copied)
}
