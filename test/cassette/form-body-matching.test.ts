/**
 * Form bodies in replay matching (#37, item 3): an OAuth token request is form-encoded, and a field
 * in it may be new every run (here a `nonce`; PKCE's `code_verifier` is redacted, so it matches
 * anyway). `ignoreBodyFields` (`--ignore-body-field`) leaves the field out of a form body as of a
 * JSON one, in-process as in the replay server; a miss names it.
 */
import { describe, expect, it } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { replayCassette } from '../../src/cassette/replay/replay-cassette.js'
import { createStorm } from '../../src/create-storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { closing } from '../helpers/teardown.js'
import { startUpstream } from '../helpers/upstream.js'

const tokenRequest = (nonce: string, order: 'as sent' | 'reordered' = 'as sent') => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: order === 'as sent' ? `grant_type=authorization_code&code=c-1&nonce=${nonce}&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcb` : `redirect_uri=http://127.0.0.1:1/cb&nonce=${nonce}&code=c-1&grant_type=authorization_code`,
})

describe('form bodies in replay matching', () => {
  it('in-process: a token request matches its recording whatever its nonce, its fields in any order; without the option the miss names the field', async () => {
    const upstream = closing(await startUpstream())
    const storm = createStorm({})
    const recorder = createCassetteRecorder(storm, { match: { ignoreBodyFields: ['nonce'] } })
    const interception = intercept(storm, { filter: (url) => url.origin === upstream.url, observer: recorder.observer })
    const recorded = (await (await fetch(`${upstream.url}/echo`, tokenRequest('v-recorded'))).json()) as { body: string }
    interception.dispose()
    await recorder.close()
    const cassette = await recorder.cassette()
    expect(cassette.header.match.ignoreBodyFields).toEqual(['nonce'])

    const replay = replayCassette(cassette)
    try {
      const answer = await fetch(`${upstream.url}/echo`, tokenRequest('v-live', 'reordered'))
      expect(answer.status).toBe(200)
      expect(((await answer.json()) as { body: string }).body).toBe(recorded.body)
    } finally {
      replay.dispose()
    }
    expect(replay.verdict()).toMatchObject({ passed: true, served: 1 })

    const strict = replayCassette(cassette, { match: { ignoreBodyFields: [] } })
    try {
      expect((await fetch(`${upstream.url}/echo`, tokenRequest('v-live'))).status).toBe(422)
    } finally {
      strict.dispose()
    }
    expect(strict.verdict().message).toContain('body differs at $.nonce: "v-recorded" ≠ "v-live"')
  })
})
