/**
 * Replacement of the literal `secrets` a user declares, in their raw and encoded forms.
 *
 * Literals are replaced longest first (spec §5.5), each one in its raw form, its
 * `encodeURIComponent` and form-encoded forms, and its JSON-escaped form, so a secret that
 * reaches a query string or a hand-serialised JSON text is still caught. Base64 forms are
 * caught by the encoded-run scan (`encoded-secrets.ts`), which decodes and rescans.
 * @note Existing `[REDACTED]` markers are never rescanned, so a literal such as `RED` cannot
 * corrupt an earlier replacement and redaction stays idempotent.
 */
import { REDACTED } from './redacted-marker.js'

/** Every form of `secret` to look for, without duplicates. */
export function literalVariants(secret: string): string[] {
  const variants = new Set<string>([secret])
  const uri = encodeURIComponent(secret)
  variants.add(uri)
  variants.add(uri.replace(/%20/g, '+'))
  variants.add(uri.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()))
  variants.add(JSON.stringify(secret).slice(1, -1))
  variants.add(JSON.stringify(secret).slice(1, -1).replace(/\//g, '\\/'))
  return [...variants].filter((variant) => variant.length > 0)
}

/** Build a function that replaces every occurrence of every literal in a text (by `mask(literal)`, default `[REDACTED]`). */
export function createLiteralScrubber(secrets: readonly string[], mask: (secret: string) => string = () => REDACTED): (text: string) => string {
  const all = new Set<string>()
  for (const secret of secrets) for (const variant of literalVariants(secret)) all.add(variant)
  const ordered = [...all].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0))
  if (ordered.length === 0) return (text) => text
  return (text: string): string => {
    let out = text
    for (const literal of ordered) {
      if (!out.includes(literal)) continue
      out = out
        .split(REDACTED)
        .map((piece) => piece.split(literal).join(mask(literal)))
        .join(REDACTED)
    }
    return out
  }
}
