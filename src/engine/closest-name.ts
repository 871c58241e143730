/**
 * "Did you mean …?" for names a user typed: the candidate fewest edits away (optimal string
 * alignment, so a swapped pair of letters is one edit), when it is close enough to be a typo.
 *
 * @note yargs computes a Levenshtein distance for `recommendCommands()` only, and does not export
 * it; flags and route names need the same suggestion, so it lives here once.
 */

/** Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1
  const cols = b.length + 1
  const d: number[] = new Array<number>(rows * cols)
  for (let i = 0; i < rows; i++) d[i * cols] = i
  for (let j = 0; j < cols; j++) d[j] = j
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(d[(i - 1) * cols + j]! + 1, d[i * cols + j - 1]! + 1, d[(i - 1) * cols + j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[(i - 2) * cols + j - 2]! + 1)
      d[i * cols + j] = best
    }
  }
  return d[rows * cols - 1]!
}

/**
 * The candidate closest to `input`, or undefined when none is within a third of its length
 * (at least one edit, at most three): further than that it is another word, not a typo.
 */
export function closestName(input: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(input.length / 3)))
  let best: string | undefined
  let bestDistance = limit + 1
  for (const candidate of candidates) {
    if (candidate === input) continue
    const distance = editDistance(input.toLowerCase(), candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}
