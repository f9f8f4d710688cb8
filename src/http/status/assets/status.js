// Canopy status page: live updates over the status stream (GUIDE §6) and the subscribe form.
// Incident cards, bars and figures are re-read from the server's rendering (one source of markup).
;(function() {
  "use strict"
  var main = document.querySelector("main[data-slug]")
  if (!main) return
  var slug = main.getAttribute("data-slug")

  // The label tables come from the page (renderStatusPage.ts), so the two never disagree.
  var labels = JSON.parse(document.getElementById("status-labels").textContent)
  var overallText = labels.overall
  var rowText = labels.rows

  function setStatusClass(element, prefix, value) {
    element.className = element.className.split(" ").filter(function(name) {
      return name.indexOf(prefix) !== 0
    }).concat([prefix + value]).join(" ")
  }

  function setRow(selector, status) {
    var row = document.querySelector(selector)
    if (!row) return
    var label = row.querySelector("[data-status]")
    label.textContent = rowText[status] || status
    setStatusClass(label, "status-", status)
  }

  // The banner and row labels change at once from the event itself.
  function applySummary(summary) {
    var overall = document.getElementById("overall")
    setStatusClass(overall, "status-", summary.overallStatus)
    overall.setAttribute("data-overall", summary.overallStatus)
    overall.querySelector("[data-overall-text]").textContent = overallText[summary.overallStatus]
    summary.components.forEach(function(component) {
      setRow("[data-component-id=\"" + CSS.escape(component.id) + "\"]", component.status)
    })
  }

  // --- the rest from the server: bars, figures, incident cards, maintenance, history ----------
  // The page is re-read (the server's cached bytes; a conditional request when unchanged) and
  // its live sections swapped in. Visitors spread their reads over half a second; a second
  // read a little later covers a runner whose cache had not yet seen the event.
  var refreshTimer = null
  function refreshPage() {
    refreshTimer = null
    fetch(location.pathname, { cache: "no-cache", headers: { accept: "text/html" } }).then(function(response) {
      return response.ok ? response.text() : Promise.reject(new Error(String(response.status)))
    }).then(function(html) {
      var fresh = new DOMParser().parseFromString(html, "text/html")
      fresh.querySelectorAll("[data-live-section]").forEach(function(section) {
        var name = section.getAttribute("data-live-section")
        var current = document.querySelector("[data-live-section=\"" + name + "\"]")
        if (current) current.replaceWith(document.importNode(section, true))
      })
      markLive(document.getElementById("live-indicator"), connected)
      updateMaintenance()
      document.body.setAttribute(
        "data-refreshes",
        String(Number(document.body.getAttribute("data-refreshes") || 0) + 1)
      )
    }, function() {})
  }
  function scheduleRefresh(delay) {
    if (refreshTimer !== null) return
    refreshTimer = setTimeout(refreshPage, delay)
  }
  function afterEvent() {
    scheduleRefresh(100 + Math.random() * 400)
    setTimeout(function() {
      scheduleRefresh(0)
    }, 2000 + Math.random() * 500)
  }
  // Uptime moves with time alone: a conditional re-read every minute (a 304 when nothing changed).
  setInterval(function() {
    scheduleRefresh(Math.random() * 5000)
  }, 60000)

  // A maintenance window turns from upcoming to in progress at its start, without a reload.
  function updateMaintenance() {
    document.querySelectorAll("[data-scheduled-for]").forEach(function(slot) {
      var state = slot.querySelector("[data-maintenance-state]")
      if (state && Date.parse(slot.getAttribute("data-scheduled-for")) <= Date.now()) {
        state.setAttribute("data-maintenance-state", "in_progress")
        state.textContent = "In progress"
      }
    })
  }
  setInterval(updateMaintenance, 5000)

  // --- the live stream, reconnecting with backoff -------------------------------------------
  var delay = 1000
  var connected = false
  function markLive(indicator, live) {
    if (!indicator) return
    indicator.classList.toggle("offline", !live)
    indicator.textContent = live ? "Live" : "Reconnecting"
  }
  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://"
    var socket = new WebSocket(scheme + location.host + "/api/v1/live/" + encodeURIComponent(slug))
    socket.onopen = function() {
      delay = 1000
      connected = true
      markLive(document.getElementById("live-indicator"), true)
    }
    socket.onmessage = function(message) {
      var event = JSON.parse(message.data)
      if (event.type === "snapshot" || event.type === "status") applySummary(event.data)
      else if (event.type === "monitor.status") {
        setRow("[data-monitor-id=\"" + CSS.escape(event.data.monitorId) + "\"]", event.data.status)
      }
      if (event.type !== "snapshot") afterEvent()
      document.body.setAttribute(
        "data-live-events",
        String(Number(document.body.getAttribute("data-live-events") || 0) + 1)
      )
    }
    socket.onclose = function() {
      if (connected) afterEvent()
      connected = false
      markLive(document.getElementById("live-indicator"), false)
      setTimeout(connect, delay)
      delay = Math.min(delay * 2, 30000)
    }
  }
  connect()

  // --- subscribe ----------------------------------------------------------------------------
  // A click while the proof of work is still computing is kept: the form says it is
  // verifying and submits itself once the proof is ready. After every answer the widget is
  // reset and starts a new proof, so another address needs no reload.
  var section = document.getElementById("subscribe")
  var form = document.getElementById("subscribe-form")
  var output = document.getElementById("subscribe-message")
  var button = form.querySelector("button[type=submit]")
  var widget = form.querySelector("altcha-widget")
  var waitingForProof = false
  var failures = 0
  function say(text, kind) {
    output.className = "form-message" + (kind ? " " + kind : "")
    output.textContent = text
  }
  function startProof() {
    if (widget && typeof widget.verify === "function") {
      var state = typeof widget.getState === "function" ? widget.getState() : undefined
      if (state !== "verifying" && state !== "verified") widget.verify()
    }
  }
  // A token works once: one already sent (the widget may not have cleared it yet) is no proof.
  var spent = {}
  function proofToken() {
    var input = form.querySelector("input[name=altcha]")
    return input && input.value && !spent[input.value] ? input.value : ""
  }
  function send(token) {
    spent[token] = true
    waitingForProof = false
    button.disabled = true
    form.setAttribute("data-state", "sending")
    say("Subscribing…", "pending")
    fetch("/api/v1/subscribe", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ orgSlug: slug, email: form.email.value, challengeToken: token })
    }).then(function(response) {
      return response.json()
    }).then(function(body) {
      say(body.message, body.success ? "success" : "error")
      if (body.success) form.email.value = ""
    }, function() {
      say("Could not reach the server. Try again.", "error")
    }).then(function() {
      button.disabled = false
      form.setAttribute("data-state", "done")
      // A token works once: the next address needs a new proof, computed in the background now.
      if (widget && typeof widget.reset === "function") widget.reset()
      setTimeout(startProof, 0)
    })
  }
  if (widget) {
    widget.addEventListener("statechange", function(event) {
      var state = event.detail && event.detail.state
      form.setAttribute("data-proof", state || "")
      if (state === "verified" && waitingForProof) {
        var payload = event.detail && event.detail.payload
        var token = payload && !spent[payload] ? payload : proofToken()
        if (token) send(token)
      } else if (state === "error" || state === "expired") {
        // A failed or expired proof is started again; a waiting visitor is told only if that keeps failing.
        failures = state === "error" ? failures + 1 : 0
        if (failures <= 3) {
          setTimeout(function() {
            if (typeof widget.reset === "function") widget.reset()
            startProof()
          }, 200)
        } else if (waitingForProof) {
          waitingForProof = false
          button.disabled = false
          say("The check could not finish. Please try again.", "error")
        }
      } else if (state === "verified") {
        failures = 0
      }
    })
  }
  document.querySelector(".subscribe-toggle").addEventListener("click", function() {
    section.hidden = !section.hidden
    if (!section.hidden) {
      document.getElementById("subscribe-email").focus()
      startProof()
    }
  })
  // Captured first, and kept from the widget's own submit handling: this script decides.
  form.addEventListener("submit", function(event) {
    event.preventDefault()
    event.stopImmediatePropagation()
    if (waitingForProof || button.disabled) return
    // The form is `novalidate`: the widget's own required checkbox must not swallow the click.
    if (!form.email.reportValidity()) return
    failures = 0
    var token = proofToken()
    if (token) return send(token)
    waitingForProof = true
    button.disabled = true
    form.setAttribute("data-state", "verifying")
    say("Verifying you are not a robot… your subscription is sent as soon as this is done.", "pending")
    startProof()
  }, true)
})()
