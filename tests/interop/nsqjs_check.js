// Interop check with nsqjs (npm), unchanged, against a running nsqd.
// usage: node nsqjs_check.js <host:port> <topic> [plain|tls|snappy|deflate]
// Prints "nsqjs: N passed, 0 failed" and exits 0 on success.
'use strict'
const nsq = require('nsqjs')

const [addr, topic, mode = 'plain'] = process.argv.slice(2)
const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))]
const opts = {}
if (mode.includes('tls')) Object.assign(opts, { tls: true, tlsVerification: false })
if (mode.includes('snappy')) opts.snappy = true
if (mode.includes('deflate')) Object.assign(opts, { deflate: true, deflateLevel: 6 })

let passed = 0
const failures = []
const check = (cond, what) => {
  if (cond) passed++
  else {
    failures.push(what)
    console.log('FAIL:', what)
  }
}

const expected = new Set()
const done = new Set()
const seen = {}
let dpubDue = 0

const finish = () => {
  check([...expected].every((b) => done.has(b)), `all finished; missing ${[...expected].filter((b) => !done.has(b))}`)
  check(JSON.stringify((seen['req-me'] || []).slice(0, 2)) === '[1,2]', `REQ redelivers with attempts+1: ${seen['req-me']}`)
  check(JSON.stringify((seen['timeout-me'] || []).slice(0, 2)) === '[1,2]', `timeout redelivers: ${seen['timeout-me']}`)
  for (const [body, attempts] of Object.entries(seen)) {
    if (body !== 'req-me' && body !== 'timeout-me') check(attempts.length === 1, `${body} delivered once: ${attempts}`)
  }
  console.log(`nsqjs: ${passed} passed, ${failures.length} failed`)
  process.exit(failures.length ? 1 : 0)
}
setTimeout(() => {
  console.log('FAIL: timed out')
  failures.push('timeout')
  finish()
}, 20000)

const maybeDone = () => {
  if (expected.size && [...expected].every((b) => done.has(b))) setTimeout(finish, 300)
}

const reader = new nsq.Reader(topic, 'nsqjs', Object.assign({ nsqdTCPAddresses: [addr], maxInFlight: 5, messageTimeout: 2000 }, opts))
reader.on('message', (msg) => {
  const body = msg.body.toString()
  ;(seen[body] = seen[body] || []).push(msg.attempts)
  if (body === 'dpub-300') check(Date.now() >= dpubDue - 5, `DPUB not early (${Date.now() - dpubDue} ms)`)
  if (body === 'req-me' && msg.attempts === 1) return msg.requeue(50, false)
  if (body === 'timeout-me' && msg.attempts === 1) return // never answer: the server times it out
  if (body === 'touch-me') {
    msg.touch()
    setTimeout(() => msg.finish(), 200)
  } else {
    msg.finish()
  }
  done.add(body)
  maybeDone()
})
reader.on('error', (e) => check(false, `reader error ${e}`))
reader.on('nsqd_connected', () => {
  const writer = new nsq.Writer(host, port, opts)
  writer.on('error', (e) => check(false, `writer error ${e}`))
  writer.on('ready', () => {
    const cb = (what) => (err) => check(!err, `${what} acknowledged (${err})`)
    for (let i = 0; i < 10; i++) {
      expected.add(`pub-${i}`)
      writer.publish(topic, `pub-${i}`, cb('PUB'))
    }
    const batch = Array.from({ length: 10 }, (_, i) => `mpub-${i}`)
    batch.forEach((b) => expected.add(b))
    writer.publish(topic, batch, cb('MPUB'))
    for (const b of ['req-me', 'timeout-me', 'touch-me']) {
      expected.add(b)
      writer.publish(topic, b, cb('PUB'))
    }
    expected.add('dpub-300')
    dpubDue = Date.now() + 300
    writer.deferPublish(topic, ['dpub-300'], 300, cb('DPUB'))
  })
  writer.connect()
})
reader.connect()
