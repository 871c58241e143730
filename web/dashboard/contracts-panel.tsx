/**
 * The contracts `toolstorm check` runs, on the live run: every rule triggered, no duplicate
 * effects, a call budget (the run's `maxCalls`, or one typed here), and once the agent reported
 * claims, that the effects do not contradict them (the contradicted claims listed under it).
 */
import type { ContractResult } from '../../src/contracts/contract.js'

export function ContractsPanel(props: { result: ContractResult | null; contradicted: readonly string[]; budget: string; budgetFromRules: number | null; onBudget(value: string): void }) {
  const budgetValid = props.budget === '' || /^\d{1,9}$/.test(props.budget)
  return (
    <div class="contracts">
      <div class="row">
        {props.result ? <span class={`badge ${props.result.passed ? 'pass' : 'fail'}`}>{props.result.passed ? 'Contract passing' : 'Contract failing'}</span> : null}
        <label class="row budget">
          <span>Call budget</span>
          <input
            type="text"
            inputMode="numeric"
            size={7}
            placeholder={props.budgetFromRules === null ? 'none' : String(props.budgetFromRules)}
            value={props.budget}
            aria-invalid={!budgetValid}
            onInput={(event) => props.onBudget((event.target as HTMLInputElement).value.trim())}
          />
        </label>
      </div>
      <ul class="checks">
        {props.result?.checks.map((check) => (
          <li key={check.name} data-check={check.name}>
            <span class={`badge ${check.passed ? 'pass' : 'fail'}`}>{check.passed ? 'pass' : 'fail'}</span> {check.name}
            <span class="muted"> {check.detail}</span>
            {check.name === 'Claims match effects' && props.contradicted.length ? (
              <ul class="contradicted">
                {props.contradicted.map((line) => (
                  <li key={line} class="mono">
                    {line}
                  </li>
                ))}
              </ul>
            ) : null}
          </li>
        ))}
      </ul>
    </div>
  )
}
