// A CommonJS tool server (node:http, as an Express app would be) that reports its commits.
'use strict'
const http = require('node:http')
const { reportEffect } = require('toolstorm/effects')

const commits = []
const server = http.createServer((req, res) => {
  let body = ''
  req.on('data', (chunk) => (body += chunk))
  req.on('end', async () => {
    if (req.method === 'POST' && req.url === '/ship') {
      const order = JSON.parse(body).order
      commits.push(order)
      await reportEffect(req, 'shipment', order)
      res.writeHead(201, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ order }))
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ commits }))
  })
})
server.listen(0, '127.0.0.1', () => console.log(server.address().port))
