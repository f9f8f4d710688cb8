// Canopy status page: live updates over the status stream (GUIDE §6) and the subscribe form.
// The incident card markup mirrors renderStatusPage.ts (incidentCard).
;(function() {
  "use strict"
  var main = document.querySelector("main[data-slug]")
  if (!main) return
  var slug = main.getAttribute("data-slug")

  // The label tables come from the page (renderStatusPage.ts), so the two never disagree.
  var labels = JSON.parse(document.getElementById("status-labels").textContent)
  var overallText = labels.overall
  var rowText = labels.rows
  var statusLabel = labels.incidents

  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, function(c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }[c]
    })
  }
  function when(iso) {
    return iso.slice(0, 10) + " " + iso.slice(11, 16) + " UTC"
  }
  function incidentCard(incident) {
    var updates = (incident.updates || []).slice().reverse().map(function(update) {
      return "<li><strong>" + escapeHtml(statusLabel[update.status] || update.status) + "</strong> - " +
        escapeHtml(update.message) + "<time datetime=\"" + escapeHtml(update.createdAt) + "\">" +
        when(update.createdAt) + "</time></li>"
    }).join("")
    var wrapper = document.createElement("div")
    wrapper.innerHTML = "<article class=\"incident severity-" + escapeHtml(incident.severity) + " status-" +
      escapeHtml(incident.status) + "\" data-incident-id=\"" + escapeHtml(incident.id) + "\"><h3>" +
      escapeHtml(incident.title) + "</h3><ol class=\"timeline\">" + updates + "</ol></article>"
    return wrapper.firstChild
  }

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

  function applySummary(summary) {
    var overall = document.getElementById("overall")
    setStatusClass(overall, "status-", summary.overallStatus)
    overall.setAttribute("data-overall", summary.overallStatus)
    overall.querySelector("[data-overall-text]").textContent = overallText[summary.overallStatus]
    summary.components.forEach(function(component) {
      setRow("[data-component-id=\"" + CSS.escape(component.id) + "\"]", component.status)
    })
  }

  function applyIncident(incident, deleted) {
    var existing = document.querySelectorAll("[data-incident-id=\"" + CSS.escape(incident.id) + "\"]")
    existing.forEach(function(element) {
      element.remove()
    })
    if (deleted) return
    if (incident.status === "resolved") {
      var past = document.getElementById("past-incidents")
      var none = past.querySelector("[data-no-past]")
      if (none) none.remove()
      past.insertBefore(incidentCard(incident), past.firstChild)
    } else {
      var active = document.getElementById("active-incidents")
      active.insertBefore(incidentCard(incident), active.firstChild)
    }
  }

  // --- the live stream, reconnecting with backoff -------------------------------------------
  var indicator = document.getElementById("live-indicator")
  var delay = 1000
  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://"
    var socket = new WebSocket(scheme + location.host + "/api/v1/live/" + encodeURIComponent(slug))
    socket.onopen = function() {
      delay = 1000
      indicator.classList.remove("offline")
      indicator.textContent = "Live"
    }
    socket.onmessage = function(message) {
      var event = JSON.parse(message.data)
      if (event.type === "snapshot" || event.type === "status") applySummary(event.data)
      else if (event.type === "monitor.status") {
        setRow("[data-monitor-id=\"" + CSS.escape(event.data.monitorId) + "\"]", event.data.status)
      } else if (event.type.indexOf("incident.") === 0) {
        applyIncident(event.data.incident, event.type === "incident.deleted")
      }
      document.body.setAttribute(
        "data-live-events",
        String(Number(document.body.getAttribute("data-live-events") || 0) + 1)
      )
    }
    socket.onclose = function() {
      indicator.classList.add("offline")
      indicator.textContent = "Reconnecting"
      setTimeout(connect, delay)
      delay = Math.min(delay * 2, 30000)
    }
  }
  connect()

  // --- subscribe ----------------------------------------------------------------------------
  var section = document.getElementById("subscribe")
  document.querySelector(".subscribe-toggle").addEventListener("click", function() {
    section.hidden = !section.hidden
    if (!section.hidden) document.getElementById("subscribe-email").focus()
  })
  var form = document.getElementById("subscribe-form")
  var output = document.getElementById("subscribe-message")
  form.addEventListener("submit", function(event) {
    event.preventDefault()
    var token = form.querySelector("input[name=altcha]")
    if (!token || !token.value) {
      output.className = "form-message error"
      output.textContent = "Verifying you are not a robot, one moment. Submit again when the check is done."
      return
    }
    fetch("/api/v1/subscribe", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ orgSlug: slug, email: form.email.value, challengeToken: token.value })
    }).then(function(response) {
      return response.json()
    }).then(function(body) {
      output.className = body.success ? "form-message" : "form-message error"
      output.textContent = body.message
    }, function() {
      output.className = "form-message error"
      output.textContent = "Could not reach the server. Try again."
    })
  })
})()
