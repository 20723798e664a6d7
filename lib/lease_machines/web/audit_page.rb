# frozen_string_literal: true

module LeaseMachines
  class Web
    # The audit page (/audit): Store#audit's findings, each with its code, resource (linked to the resource's page,
    # at the offending event) and message; or, when there are none, "valid, N events checked".
    class AuditPage
      attr_reader :report

      # Reads the audit from +store+; returns self.
      def read(store)
        @report = store.audit
        @database = store.path
        self
      end

      def html(view)
        Layout.render(view, title: "Audit", database: @database, main: main(view))
      end

      private

      def main(view)
        checked = "#{@report.checked_events} #{@report.checked_events == 1 ? "event" : "events"} checked"
        return %(<h1>Audit</h1>\n<p class="valid">valid, #{checked}</p>) if @report.valid?

        count = @report.findings.size
        <<~HTML
          <h1>Audit</h1>
          <p class="invalid">#{count} #{count == 1 ? "finding" : "findings"}, #{checked}</p>
          <table class="findings">
          <thead><tr><th>Code</th><th>Resource</th><th>Event</th><th>Message</th></tr></thead>
          <tbody>
          #{@report.findings.map { finding(view, _1) }.join("\n")}
          </tbody>
          </table>
        HTML
      end

      def finding(view, finding)
        v = view
        name, slot = AuditPage.lease_of(finding.resource)
        page = v.url("/resource", name: name, slot: slot)
        at = v.url("/resource", name: name, slot: slot, after: [finding.event_index - 1, 0].max)
        %(<tr class="finding"><td>#{v.h(finding.code)}</td><td class="resource"><a href="#{v.h(page)}">) +
          %(#{v.h(finding.resource)}</a></td><td><a href="#{v.h(at)}">#{finding.event_index}</a></td>) +
          %(<td>#{v.h(finding.message)}</td></tr>)
      end

      # [resource, slot] of a finding's +resource+: Store#audit names a semaphore's slot above 0 "NAME [slot N]"
      # (slot nil otherwise, every slot of the resource).
      def self.lease_of(resource)
        match = /\A(.+) \[slot ([1-9]\d*)\]\z/m.match(resource)
        match ? [match[1], Integer(match[2], 10)] : [resource, nil]
      end
    end
  end
end
