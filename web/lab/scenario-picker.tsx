/** The six scenarios as a radio group, numbered 01–06 with their phase. */
import { SCENARIO_IDS, SCENARIOS, type ScenarioId } from '../../dist/demo/scenarios.js'

export function ScenarioPicker(props: { value: ScenarioId; disabled: boolean; onChange(id: ScenarioId): void }) {
  return (
    <fieldset class="scenarios" disabled={props.disabled}>
      <legend>Scenario</legend>
      {SCENARIO_IDS.map((id, index) => (
        <label key={id} class={id === props.value ? 'scenario selected' : 'scenario'}>
          <input type="radio" name="scenario" value={id} checked={id === props.value} onChange={() => props.onChange(id)} />
          <span class="scenario-number mono">{String(index + 1).padStart(2, '0')}</span>
          <span>
            <span class="scenario-short">{SCENARIOS[id].short}</span>
            <span class="scenario-phase muted">{SCENARIOS[id].phase}</span>
          </span>
        </label>
      ))}
    </fieldset>
  )
}
