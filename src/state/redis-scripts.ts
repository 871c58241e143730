/**
 * The Lua scripts that take a run's order-dependent decisions atomically in Redis: the call
 * budget, the route's ordinal, key de-duplication and rule limits, as the memory ledger's `begin()` takes them
 * in one process (run.ts `reserve()`, rules/select.ts `selectRule()`). Every key a script touches
 * belongs to one run and shares its `{prefix:run}` hash tag, so they are Redis Cluster-safe.
 * Times come from Redis (TIME), so replicas on different machines share one run clock.
 * @see ../../docs/scale-out.md#key-layout
 */

/**
 * Rule selection over the rules whose route matches, in list order, from rule number `first`.
 * Each rule is 4 ARGV entries from `base`: name, limit (-1: none), mode, calls ("2,3"; "": all).
 * mode `a`: its draw fires; `n`: it does not; `d`: a draw decides, which needs the key, so the
 * script stops before it and returns its number (the client draws and continues with SELECT).
 */
const SELECT_FROM = `
local function selectFrom(s, first, count, base, ordinal)
  local selected = ''
  for i = first, count do
    local j = base + 4 * (i - 1)
    local name, limit, mode, calls = ARGV[j], tonumber(ARGV[j + 1]), ARGV[j + 2], ARGV[j + 3]
    if calls == '' or string.find(',' .. calls .. ',', ',' .. ordinal .. ',', 1, true) then
      if selected == '' and mode ~= 'n' and (limit < 0 or tonumber(redis.call('HGET', s, 'c:' .. name .. ':s') or '0') < limit) then
        if mode == 'd' then return selected, i end
        selected = name
        redis.call('HINCRBY', s, 'c:' .. name .. ':s', 1)
      end
      redis.call('HINCRBY', s, 'c:' .. name .. ':e', 1)
    end
  end
  return selected, 0
end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

/**
 * BEGIN. KEYS: state hash, explicit-keys set, exchange-id hash, running-calls hash, the run's own
 * rules (a hash: token, config; absent: the proxies' rules decide).
 * ARGV: ttlMs, maxCalls (-1: none), route, requested key ("": none), exchange id, parent exchange
 * id ("": none), number of rules, method, redacted URL, itemized-calls limit, the token of the run's
 * own rules the replica decided by ("": none), then the rules (see SELECT_FROM) from ARGV[12]. An
 * itemized call is listed as running until FINISH: the array [call, route, ordinal, key, parent,
 * started ms, method, url, selected rule] (the merged report shows it; the rule is filled in by
 * SELECT when a draw decides).
 * Returns {2, token, config JSON} ("": none) when the run's own rules are not those the replica
 * decided by (nothing is taken: it decides again by these), {0, startMs, nowMs} for a call refused
 * by the budget, else
 * {1, startMs, nowMs, call, ordinal, key, parentCall (0: none), selected rule ("": none), pending rule (0: none)}.
 */
export const BEGIN_SCRIPT = `${SELECT_FROM}
local s, k, x, r = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ttl = ARGV[1]
local token = redis.call('HGET', KEYS[5], 'token') or ''
if token ~= ARGV[11] then return {2, token, redis.call('HGET', KEYS[5], 'config') or ''} end
if token ~= '' then redis.call('PEXPIRE', KEYS[5], ttl) end
local now = nowMs()
local start = tonumber(redis.call('HGET', s, 'start'))
if not start then
  start = now
  redis.call('HSET', s, 'start', start)
end
local maxCalls = tonumber(ARGV[2])
if maxCalls >= 0 and tonumber(redis.call('HGET', s, 'calls') or '0') >= maxCalls then
  redis.call('HINCRBY', s, 'budget', 1)
  redis.call('PEXPIRE', s, ttl)
  return {0, start, now}
end
local call = redis.call('HINCRBY', s, 'calls', 1)
local route = ARGV[3]
local ordinal = redis.call('HINCRBY', s, 'o:' .. route, 1)
local requested = ARGV[4]
-- Default keys #1..#n are taken up to this ordinal (a default key for this call is not yet).
local upTo = ordinal
if requested == '' then upTo = ordinal - 1 end
local function taken(key)
  if redis.call('SISMEMBER', k, route .. '\\n' .. key) == 1 then return true end
  local n = string.match(key, '^#([1-9]%d*)$')
  return n ~= nil and tonumber(n) <= upTo
end
local key = requested
if key == '' then key = '#' .. ordinal end
if requested ~= '' or taken(key) then
  if taken(key) then
    local n = 2
    while taken(key .. '#' .. n) do n = n + 1 end
    key = key .. '#' .. n
  end
  redis.call('SADD', k, route .. '\\n' .. key)
  redis.call('PEXPIRE', k, ttl)
end
redis.call('HSET', x, ARGV[5], call)
-- A parent is a call still running (finished ones are stored negated), as in one process.
local parent = 0
if ARGV[6] ~= '' then parent = math.max(0, tonumber(redis.call('HGET', x, ARGV[6]) or '0')) end
local selected, pending = selectFrom(s, 1, tonumber(ARGV[7]), 12, ordinal)
if call <= tonumber(ARGV[10]) then
  redis.call('HSET', r, call, cjson.encode({call, route, ordinal, key, parent, now - start, ARGV[8], ARGV[9], selected}))
  redis.call('PEXPIRE', r, ttl)
end
redis.call('PEXPIRE', s, ttl)
redis.call('PEXPIRE', x, ttl)
return {1, start, now, call, ordinal, key, parent, selected, pending}
`

/**
 * SELECT: continue a selection BEGIN stopped at a draw, the draws now decided (modes `a`/`n`).
 * KEYS: state hash, running-calls hash. ARGV: ordinal, first rule, number of rules, call, then
 * the rules from ARGV[5]. Returns the selected rule's name ("": none).
 */
export const SELECT_SCRIPT = `${SELECT_FROM}
local selected = selectFrom(KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]), 5, tonumber(ARGV[1]))
if selected ~= '' then
  local running = redis.call('HGET', KEYS[2], ARGV[4])
  if running then
    local call = cjson.decode(running)
    call[9] = selected
    redis.call('HSET', KEYS[2], ARGV[4], cjson.encode(call))
  end
end
return selected
`

/**
 * FINISH: append finished calls, count their faults as triggered, take them off the running
 * calls and mark them finished in the exchange-id hash (negated: effects may still name them; a
 * new request may no longer call them its parent). One call per run per event loop turn carries
 * every call that finished in it.
 * KEYS: state hash, calls stream, exchange-id hash, running-calls hash. ARGV: ttlMs, stream
 * bound, then per call: record JSON ("": not itemized), triggered rule ("": none), exchange id,
 * call number.
 */
export const FINISH_SCRIPT = `
for i = 3, #ARGV, 4 do
  if ARGV[i] ~= '' then redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'c', ARGV[i]) end
  if ARGV[i + 1] ~= '' then redis.call('HINCRBY', KEYS[1], 'c:' .. ARGV[i + 1] .. ':t', 1) end
  redis.call('HSET', KEYS[3], ARGV[i + 2], '-' .. ARGV[i + 3])
  redis.call('HDEL', KEYS[4], ARGV[i + 3])
end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`

/**
 * EFFECT: record a committed effect against the call an exchange id names, whichever replica served it.
 * KEYS: state hash, exchange-id hash, effects stream. ARGV: ttlMs, exchange id, name, key (both
 * redacted), identity digest (of the raw pair), redacted ("1"/"0"), effect limit.
 * Returns {0} for an unknown exchange, {-1} at the limit, else {1, effect JSON}.
 */
export const EFFECT_SCRIPT = `
local s = KEYS[1]
local call = redis.call('HGET', KEYS[2], ARGV[2])
if not call then return {0} end
call = math.abs(tonumber(call))
if redis.call('XLEN', KEYS[3]) >= tonumber(ARGV[7]) then return {-1} end
local field = 'i:' .. ARGV[5]
local identity = redis.call('HGET', s, field)
if not identity then
  identity = redis.call('HINCRBY', s, 'identities', 1)
  redis.call('HSET', s, field, identity)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local start = tonumber(redis.call('HGET', s, 'start') or now)
local effect = cjson.encode({name = ARGV[3], key = ARGV[4], call = call, at = math.max(0, now - start) / 1000, identity = tonumber(identity), redacted = ARGV[6] == '1'})
redis.call('XADD', KEYS[3], '*', 'e', effect)
redis.call('PEXPIRE', KEYS[3], ARGV[1])
return {1, effect}
`

/** REFUSED: count a refused effect report in a run that still exists (its first reason kept). */
export const REFUSED_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'refused', 1)
redis.call('HSETNX', KEYS[1], 'refusedFirst', ARGV[1])
return 1
`

/**
 * CASSETTE: append one recorded exchange (a cassette line, redacted and bounded as the
 * single-process recorder stores it) to the run's cassette stream; refused and counted beyond
 * the bounds, so a long run never fills Redis. The first line a replica records for a run brings
 * the cassette header, kept if none is there yet.
 * KEYS: state hash, cassette stream. ARGV: ttlMs, max lines, max bytes, header ("": sent before), line.
 * Returns 1 when stored, 0 when refused by a bound.
 */
export const CASSETTE_SCRIPT = `
local s, c = KEYS[1], KEYS[2]
if ARGV[4] ~= '' then redis.call('HSETNX', s, 'cassette', ARGV[4]) end
redis.call('PEXPIRE', s, ARGV[1])
local bytes = string.len(ARGV[5])
if redis.call('XLEN', c) >= tonumber(ARGV[2]) or tonumber(redis.call('HGET', s, 'cassetteBytes') or '0') + bytes > tonumber(ARGV[3]) then
  redis.call('HINCRBY', s, 'cassetteDropped', 1)
  return 0
end
redis.call('HINCRBY', s, 'cassetteBytes', bytes)
redis.call('XADD', c, '*', 'x', ARGV[5])
redis.call('PEXPIRE', c, ARGV[1])
return 1
`
