import { render } from 'preact'
import { useMemo, useState } from 'preact/hooks'
import '../shared/base.css'
import './dashboard.css'
import { createAdminClient } from './admin-client.js'
import { Dashboard } from './dashboard.js'
import { forgetToken, takeToken } from './token.js'

/** Without a token the page shows how to get one, and nothing else. */
function NeedsToken(props: { refused: boolean }) {
  return (
    <main class="needs-token panel">
      <h1>toolstorm dashboard</h1>
      <p role="alert">{props.refused ? 'The proxy refused this token (it changes each time the proxy starts).' : 'This page needs the admin token.'}</p>
      <p>
        Open the link the proxy printed at start: <code>dashboard: http://127.0.0.1:8788/dashboard/#token=…</code>
      </p>
    </main>
  )
}

function App() {
  const [token, setToken] = useState(takeToken)
  const [refused, setRefused] = useState(false)
  const client = useMemo(() => (token ? createAdminClient(token) : null), [token])
  if (!token || !client) return <NeedsToken refused={refused} />
  return (
    <Dashboard
      client={client}
      onUnauthorized={() => {
        forgetToken()
        setRefused(true)
        setToken(null)
      }}
    />
  )
}

render(<App />, document.getElementById('app') as HTMLElement)
