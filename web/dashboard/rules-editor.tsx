/**
 * Edit the rules live, as JSON or YAML. The proxy validates with the same schema as rules files
 * and answers with the failing fields; each error is shown at its line (marked in the gutter,
 * listed under the editor with a button that moves the cursor there). The rules shown are the
 * report's, so redacted values stay redacted; the proxy keeps their real values on save.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { AdminRequestError, type AdminClient } from './admin-client.js'
import { locateErrors, type FieldError } from './locate-field.js'

type Format = 'json' | 'yaml'

async function render(document: Record<string, unknown>, format: Format): Promise<string> {
  if (format === 'json') return JSON.stringify(document, null, 2) + '\n'
  const yaml = await import('yaml')
  return yaml.stringify(document)
}

export function RulesEditor(props: { client: AdminClient; document: Record<string, unknown>; redaction: { keys: number; secrets: number }; onClose(): void }) {
  const [format, setFormat] = useState<Format>('json')
  const [text, setText] = useState(() => JSON.stringify(props.document, null, 2) + '\n')
  const [errors, setErrors] = useState<FieldError[]>([])
  const [status, setStatus] = useState<string | null>(null)
  const [saving, setSaving] = useState(false)
  const textarea = useRef<HTMLTextAreaElement>(null)
  const gutter = useRef<HTMLDivElement>(null)
  const lines = useMemo(() => text.split('\n').length, [text])
  const errorLines = new Map(errors.filter((e) => e.line !== null).map((e) => [e.line as number, e.message]))

  useEffect(() => {
    textarea.current?.setSelectionRange(0, 0)
    textarea.current?.focus()
  }, [])

  const switchFormat = async (next: Format) => {
    if (next === format) return
    let document: unknown
    try {
      document = format === 'json' ? JSON.parse(text) : (await import('yaml')).parse(text)
    } catch (error) {
      setStatus(`Failed to switch to ${next.toUpperCase()}: the ${format.toUpperCase()} does not parse (${(error as Error).message.split('\n')[0]}). Fix it first.`)
      return
    }
    setText(await render(document as Record<string, unknown>, next))
    setFormat(next)
    setErrors([])
    setStatus(null)
  }

  const reload = async () => {
    setText(await render(props.document, format))
    setErrors([])
    setStatus('Reloaded the rules in force.')
  }

  const apply = async () => {
    setSaving(true)
    setStatus(null)
    try {
      const answer = await props.client.json<{ ok: true; rules: number; warnings?: Array<{ rule: string; message: string }> }>('PUT', '/dashboard/rules', { body: text, contentType: format === 'yaml' ? 'application/yaml' : 'application/json' })
      setErrors([])
      // Rules that can never fire are applied anyway; say so where the user just pressed "Apply".
      const warnings = (answer.warnings ?? []).map((warning) => ` Warning: rule "${warning.rule}": ${warning.message}`).join('')
      setStatus(`Rules applied: ${answer.rules} rule(s) in force. In-flight exchanges finish under their old rule.${warnings}`)
    } catch (error) {
      if (error instanceof AdminRequestError) {
        const located = await locateErrors(text, error.message, error.details)
        setErrors(located)
        setStatus(error.message)
      } else setStatus(`Failed to apply the rules: ${(error as Error).message}. Check that the proxy is running.`)
    } finally {
      setSaving(false)
    }
  }

  const goTo = (line: number) => {
    const element = textarea.current
    if (!element) return
    const parts = text.split('\n')
    const start = parts.slice(0, line - 1).reduce((sum, part) => sum + part.length + 1, 0)
    element.focus()
    element.setSelectionRange(start, start + (parts[line - 1]?.length ?? 0))
    const lineHeight = parseFloat(getComputedStyle(element).lineHeight) || 20
    element.scrollTop = Math.max(0, (line - 3) * lineHeight)
  }

  return (
    <section class="panel rules-editor" aria-labelledby="rules-title">
      <div class="row editor-head">
        <h2 id="rules-title">Rules</h2>
        <div role="radiogroup" aria-label="Format" class="row">
          {(['json', 'yaml'] as const).map((id) => (
            <label key={id} class="row">
              <input type="radio" name="rules-format" value={id} checked={format === id} onChange={() => void switchFormat(id)} />
              {id.toUpperCase()}
            </label>
          ))}
        </div>
      </div>
      <p class="muted small">
        Validated by the proxy with the schema of rules files (<a href="https://github.com/toolstorm/toolstorm/blob/main/docs/rules.md" target="_blank" rel="noreferrer">docs/rules.md</a>). Values shown as redacted keep their real value when left unchanged
        {props.redaction.keys + props.redaction.secrets > 0 ? `; the redaction settings (${props.redaction.keys} key(s), ${props.redaction.secrets} secret(s)) are kept and not shown` : ''}.
      </p>
      <div class="editor">
        <div class="gutter mono" ref={gutter} aria-hidden="true">
          {Array.from({ length: lines }, (_, index) => (
            <div key={index} class={errorLines.has(index + 1) ? 'gutter-line error' : 'gutter-line'} title={errorLines.get(index + 1)}>
              {index + 1}
            </div>
          ))}
        </div>
        <textarea
          ref={textarea}
          class="mono"
          spellcheck={false}
          aria-label={`Rules (${format.toUpperCase()})`}
          aria-invalid={errors.length > 0}
          aria-describedby={errors.length ? 'rules-errors' : undefined}
          value={text}
          onInput={(event) => setText((event.target as HTMLTextAreaElement).value)}
          onScroll={(event) => {
            if (gutter.current) gutter.current.scrollTop = (event.target as HTMLTextAreaElement).scrollTop
          }}
          onKeyDown={(event) => {
            if ((event.ctrlKey || event.metaKey) && event.key === 'Enter') void apply()
          }}
        />
      </div>
      {errors.length ? (
        <ul id="rules-errors" class="field-errors" role="alert">
          {errors.map((error, index) => (
            <li key={index} data-path={error.path ?? ''} data-line={error.line ?? ''}>
              {error.line !== null ? (
                <button type="button" class="link" onClick={() => goTo(error.line as number)}>
                  Line {error.line}
                </button>
              ) : null}{' '}
              {error.path ? <code>{error.path}</code> : null} {error.message}
            </li>
          ))}
        </ul>
      ) : null}
      {status ? (
        <p class={errors.length ? 'notice fail' : 'notice'} role="status">
          {status}
        </p>
      ) : null}
      <div class="row">
        <button type="button" class="primary" disabled={saving} onClick={() => void apply()}>
          {saving ? 'Applying…' : 'Apply rules'}
        </button>
        <button type="button" onClick={() => void reload()}>
          Reload
        </button>
        <button type="button" onClick={props.onClose}>
          Close
        </button>
        <span class="muted small">Ctrl+Enter applies</span>
      </div>
    </section>
  )
}
