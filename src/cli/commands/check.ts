import type { Argv, CommandModule } from 'yargs'
import { contract } from '../../contracts/contract.js'
import { duplicateEffects, formatDuplicateEffects } from '../../engine/contracts/duplicate-effects.js'
import { readReportsOrCassette } from '../../cassette/format/read-reports-or-cassette.js'
import { formatCheck } from '../../demo/format-demo.js'
import { printError, printLine } from '../output.js'
import { formatContradictedClaims } from '../../claims/contradicted-claims.js'
import { numberOption } from '../numeric-options.js'
import { formatUnapprovedEffects, unapprovedEffects } from '../../engine/contracts/effects-require-approval.js'
import { scenarioChecks } from '../../demo/scenario-checks.js'

const COUNT = { min: 0, max: Number.MAX_SAFE_INTEGER, expected: 'a nonnegative integer' }

interface CheckArgs {
  file: string
  'max-calls'?: number
  'max-model-calls'?: number
  'max-tokens'?: number
  'max-recovery-tokens'?: number
  json: boolean
  claims: boolean
  'require-approval': Approval[]
}

interface Approval {
  effect: string
  route: string
}

/** `EFFECT=ROUTE` (`shipment=POST /approve`): split at the first `=`, both sides nonempty. */
function parseApprovals(values: unknown): Approval[] {
  return (Array.isArray(values) ? values : [values]).map((value) => {
    const text = String(value)
    const at = text.indexOf('=')
    const effect = at < 0 ? '' : text.slice(0, at).trim()
    const route = at < 0 ? '' : text.slice(at + 1).trim()
    if (effect === '' || route === '') throw new Error(`--require-approval: expected EFFECT=ROUTE (shipment="POST /approve"), got ${JSON.stringify(text)}`)
    return { effect, route }
  })
}

export const checkCommand: CommandModule<object, CheckArgs> = {
  command: 'check <file>',
  describe: 'Run the contracts on a saved report or cassette: every rule triggered, no duplicate effects, call (and model-call, token, recovery-token) budgets',
  builder: (yargs: Argv) =>
    yargs
      .positional('file', { type: 'string', demandOption: true, describe: 'Report, demo run or comparison (JSON), or a cassette (JSON Lines)' })
      .option('max-calls', { ...numberOption('max-calls', COUNT), describe: "Fail when more calls were made (refusals included); default: the rules' maxCalls, when they set one, else no call budget" })
      .option('max-model-calls', { ...numberOption('max-model-calls', COUNT), describe: 'Fail when more model calls were made' })
      .option('max-tokens', { ...numberOption('max-tokens', COUNT), describe: 'Fail when the model calls used more tokens (input + output), or reported no usage' })
      .option('max-recovery-tokens', { ...numberOption('max-recovery-tokens', COUNT), describe: 'Fail when recovering from any one triggered fault took more tokens, or a recovery reported no usage' })
      .option('claims', { type: 'boolean', default: true, describe: "When the report holds claims, fail on one the effects contradict (silent commit, phantom success); --no-claims to skip" })
      .option('require-approval', { type: 'string', array: true, default: [], coerce: parseApprovals, describe: 'EFFECT=ROUTE: fail when an effect of that name committed without a 2xx answer from the approval route before it (repeatable)' })
      .option('json', { type: 'boolean', default: false, describe: 'Print the contract as JSON, with the effects committed twice (duplicates)' }) as unknown as Argv<CheckArgs>,
  async handler(args) {
    const maxCalls = args['max-calls']
    const maxModelCalls = args['max-model-calls']
    const maxTokens = args['max-tokens']
    const maxRecovery = args['max-recovery-tokens']
    const { reports, omitted, replay, demo } = await readReportsOrCassette(args.file)
    if (omitted) printError(`warning: ${omitted.runs} runs are not in ${args.file} (${omitted.reason}): the contract runs on the others`)
    // The contract is rebuilt from the trace, never taken from a verdict stored in the file.
    const results = reports.map((report, index) => {
      const checks = contract(report).requireTriggered().noDuplicateEffects()
      const run = demo[index] ?? null
      // A budget applies only when someone set one: the flag, else the run's rules (`maxCalls`), else the demo's. None by default.
      const budget = maxCalls ?? report.maxCalls ?? run?.maxCalls ?? null
      if (budget !== null) checks.atMostCalls(budget)
      if (maxModelCalls !== undefined) checks.atMostModelCalls(maxModelCalls)
      if (maxTokens !== undefined) checks.atMostTokens(maxTokens)
      if (maxRecovery !== undefined) checks.maxRecoveryTokens(maxRecovery)
      // On by default once the agent reported claims: a silent commit or a phantom success fails the run.
      const claims = Boolean(report.claims?.length) && args.claims
      // A demo run (the lab's export): its scenario's own checks, as the demo judged it; shipments counted from the trace.
      const routeOf = (tool: string) => (report.calls.some((call) => call.route === `tools/call ${tool}`) ? `tools/call ${tool}` : tool)
      if (run) {
        const shipments = report.effects.filter((effect) => effect.name === 'shipment').length
        scenarioChecks(checks, run.scenario, { completed: run.completed, shipments, elapsed: run.elapsed, routeOf, claims })
      } else if (claims) checks.claimsMatchEffects()
      // The approval outage already requires the shipment's approval: the same flag is not a second check.
      const scenarioApproval = run?.scenario === 'approval_outage' ? `shipment=${routeOf('request_approval')}` : null
      for (const approval of args['require-approval']) if (`${approval.effect}=${approval.route}` !== scenarioApproval) checks.effectsRequireApproval(approval)
      // A replay's report: the replay itself must have matched its cassette (its contracts are run again above).
      if (replay && replay.code !== 'ERR_CONTRACT_FAILED') checks.check('Replay matched its cassette', replay.passed, replay.message)
      return checks.toJSON()
    })
    // Which effects were committed twice (the check's detail only counts them): listed in text, and in JSON.
    const duplicates = reports.map((report) => duplicateEffects(report))
    const many = reports.length > 1
    if (args.json) {
      const documents = results.map((result, index) => ({ run: reports[index]!.run, ...result, duplicates: duplicates[index] ?? [] }))
      // The runs the file lacks are said in JSON too, also beside a single run: a pass on what is left is not a pass on them.
      const left = omitted ? { omitted } : {}
      printLine(JSON.stringify(documents.length === 1 ? { ...documents[0], ...left } : { runs: documents, ...left }, null, 2))
    } else {
      results.forEach((result, index) => {
        // Several runs: each names its run, and only a failing run lists its checks (those that failed).
        printLine(many ? `${result.passed ? 'PASS' : 'FAIL'} run ${reports[index]!.run}` : result.passed ? 'PASS' : 'FAIL')
        if (many && result.passed) return
        for (const check of result.checks) {
          if (many && check.passed) continue
          printLine(formatCheck(check, ''))
          if (check.name === 'No duplicate side effects') for (const line of formatDuplicateEffects(duplicates[index] ?? [])) printLine(`    ${line}`)
          if (check.name === 'Claims match effects' && !check.passed) for (const line of formatContradictedClaims(reports[index]!)) printLine(`    ${line}`)
          const approval = args['require-approval'].find((a) => check.name === `Approval required: ${a.effect}`)
          if (approval && !check.passed) for (const line of formatUnapprovedEffects(unapprovedEffects(reports[index]!, approval.effect, approval.route), approval.route)) printLine(`    ${line}`)
        }
      })
      if (many) printLine(`${results.length} runs: ${results.filter((result) => !result.passed).length} failed, ${results.filter((result) => result.passed).length} passed`)
    }
    if (results.some((result) => !result.passed)) process.exitCode = 1
  },
}
