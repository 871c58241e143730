import '../shims/globals.js'
import { z } from 'zod'
import { render } from 'preact'
import '../shared/base.css'
import './lab.css'
import { Lab } from './lab.js'

// The page's policy forbids eval; tell zod not to try it.
z.config({ jitless: true })

render(<Lab />, document.getElementById('app') as HTMLElement)
