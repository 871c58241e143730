/**
 * Where in the editor's text a validation error points: the admin API names fields as JSON paths
 * (`$.rules[0].kind: …`) and syntax errors by `line L, column C`. The text is parsed with the
 * `yaml` package (JSON is YAML), loaded only when an error needs locating or YAML is chosen.
 */

export interface FieldError {
  /** The JSON path, or null for errors about the whole document. */
  readonly path: string | null
  readonly message: string
  /** 1-based line in the editor, when found. */
  readonly line: number | null
}

type Segment = string | number

/** `$.rules[0]["odd key"]` → `['rules', 0, 'odd key']`. */
export function parseJsonPath(path: string): Segment[] | null {
  if (!path.startsWith('$')) return null
  const segments: Segment[] = []
  const pattern = /\.([A-Za-z_$][\w$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/y
  pattern.lastIndex = 1
  while (pattern.lastIndex < path.length) {
    const match = pattern.exec(path)
    if (!match) return null
    if (match[1] !== undefined) segments.push(match[1])
    else if (match[2] !== undefined) segments.push(Number(match[2]))
    else segments.push(JSON.parse(match[3] as string) as string)
  }
  return segments
}

function lineAt(text: string, offset: number): number {
  let line = 1
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++
  return line
}

/** Split the API's answer into located errors. */
export async function locateErrors(text: string, message: string, details: readonly string[]): Promise<FieldError[]> {
  const syntax = /line (\d+), column \d+/.exec(message)
  if (!details.length) return [{ path: null, message, line: syntax ? Number(syntax[1]) : null }]
  const yaml = await import('yaml')
  const document = yaml.parseDocument(text, { uniqueKeys: false })
  return details.map((detail) => {
    const split = /^(\$\S*): (.*)$/.exec(detail)
    if (!split) return { path: null, message: detail, line: null }
    const path = split[1] as string
    const what = split[2] as string
    const segments = parseJsonPath(path)
    let offset: number | null = null
    if (segments) {
      // The deepest node that exists along the path; for a key, the line of the key itself.
      for (let depth = segments.length; depth >= 0 && offset === null; depth--) {
        const parent = depth === 0 ? document.contents : document.getIn(segments.slice(0, depth - 1), true)
        const last = segments[depth - 1]
        if (depth > 0 && yaml.isMap(parent)) {
          const pair = parent.items.find((item) => yaml.isScalar(item.key) && item.key.value === last)
          if (pair && yaml.isNode(pair.key) && pair.key.range) offset = pair.key.range[0]
        } else if (depth > 0 && yaml.isSeq(parent) && typeof last === 'number') {
          const item = parent.items[last]
          if (yaml.isNode(item) && item.range) offset = item.range[0]
        } else if (depth === 0 && yaml.isNode(document.contents) && document.contents.range) offset = document.contents.range[0]
      }
      // An unknown field: point at the field, not at its object.
      const unknown = /^unknown fields? "([^"]+)"/.exec(what)
      const target = document.getIn(segments, true)
      if (unknown && yaml.isMap(target)) {
        const pair = target.items.find((item) => yaml.isScalar(item.key) && item.key.value === unknown[1])
        if (pair && yaml.isNode(pair.key) && pair.key.range) offset = pair.key.range[0]
      }
    }
    return { path, message: what, line: offset === null ? null : lineAt(text, offset) }
  })
}
