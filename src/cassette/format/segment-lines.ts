/**
 * The lines of a version 4 cassette that are not exchanges. Version 4 is append-only: the header
 * is written once and every later fact is a line of its own, appended after what it speaks of, so
 * a recorder writes each exchange once and a reader finds a valid cassette at any moment.
 *
 * | line | what it says |
 * |---|---|
 * | `{"line":"segment",…}` | a new recording appends from here (a restart on the same file, a rotation that continued one): when it started, the settings it ran with |
 * | `{"line":"settings",…}` | the rules changed while recording (`PUT /rules`): the settings from here on |
 * | `{"line":"effects",…}` | commits reported after exchange `seq`'s line was written |
 * | `{"line":"claims",…}` | a run's claims as judged when written; a later line for the run replaces them |
 * | `{"line":"continues",…}` | a run whose earlier calls are in another part of a rotated recording goes on here: its call ids and ordinals continue |
 * | `{"line":"end",…}` | the recorder closed the file cleanly, after this many exchanges |
 *
 * A line counts once its newline is written: a version 4 file may end in an incomplete line (the
 * write a `kill -9` interrupted), which readers skip and say so.
 * @see ../../../docs/cassettes.md#the-file-format
 */
import { z } from 'zod'
import { reportClaimSchema } from '../../engine/schema/claim-schema.js'
import { cassetteFileExchangeSchema, cassetteHeaderSchema, segmentSettingsSchema, storedEffectSchema } from './cassette-schema.js'

const datetime = z.iso.datetime({ offset: true })

export const segmentLineSchema = z.strictObject({
  line: z.literal('segment'),
  /** When this recording started (ISO 8601). */
  started: datetime,
  /** Exchanges before it in the file: its first exchange has `seq` after + 1. */
  after: z.int().min(0),
  settings: segmentSettingsSchema,
  /** Its exchanges were not appended as they happened: recovered from a journal an earlier toolstorm left behind. */
  recovered: z.literal('journal').optional(),
})

export const settingsLineSchema = z.strictObject({
  line: z.literal('settings'),
  /** When they changed (ISO 8601). */
  at: datetime,
  settings: segmentSettingsSchema.partial(),
})

export const effectsLineSchema = z.strictObject({
  line: z.literal('effects'),
  /** The exchange the effects belong to (an earlier line). */
  seq: z.int().min(1),
  effects: z.array(storedEffectSchema).min(1).max(10_000),
})

export const claimsLineSchema = z.strictObject({
  line: z.literal('claims'),
  run: z.string().min(1).max(200),
  claims: z.array(reportClaimSchema).max(10_000),
})

export const continuesLineSchema = z.strictObject({
  line: z.literal('continues'),
  run: z.string().min(1).max(200),
  /** The part (a file beside this one) holding the run's earlier calls. */
  from: z.string().min(1),
  /** Calls of the run before its next one here. */
  calls: z.int().min(1),
  /** Per-route ordinals the run had reached. */
  ordinals: z.record(z.string(), z.int().min(1)),
})

export const endLineSchema = z.strictObject({
  line: z.literal('end'),
  /** When the recorder closed the file (ISO 8601); absent in a file written whole (`Cassette.save`). */
  ended: datetime.optional(),
  /** Exchanges in the file so far: a reader that counts fewer knows lines are missing. */
  exchanges: z.int().min(0),
})

export const segmentLinesSchema = z.discriminatedUnion('line', [segmentLineSchema, settingsLineSchema, effectsLineSchema, claimsLineSchema, continuesLineSchema, endLineSchema], {
  error: 'expected "line" to be segment, settings, effects, claims, continues or end',
})

/** Any line of a cassette file: the header, an exchange, or (version 4) one of the lines above. */
export const cassetteLineSchema = z.union([cassetteHeaderSchema, cassetteFileExchangeSchema, segmentLinesSchema])

export type SegmentLine = z.infer<typeof segmentLineSchema>
export type SettingsLine = z.infer<typeof settingsLineSchema>
export type EffectsLine = z.infer<typeof effectsLineSchema>
export type ClaimsLine = z.infer<typeof claimsLineSchema>
export type EndLine = z.infer<typeof endLineSchema>
export type ContinuesLine = z.infer<typeof continuesLineSchema>

/** A run that goes on from another part: where its calls resume (`seq`: its first exchange here). */
export interface Continuation extends Omit<ContinuesLine, 'line'> {
  readonly seq: number
}
export type SegmentLines = z.infer<typeof segmentLinesSchema>

/** One recording in a cassette: the first starts with the header, each later one with a segment line. */
export interface CassetteSegment {
  /** When it started (ISO 8601). */
  readonly started: string
  /** `seq` of its first exchange (when it has one). */
  readonly first: number
  exchanges: number
  /** Closed cleanly (an end line); false after a `kill -9` or a crash. */
  ended: boolean
  /** When, if the end line says. */
  endedAt?: string
  readonly recovered?: 'journal'
}
