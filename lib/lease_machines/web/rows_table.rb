# frozen_string_literal: true

module LeaseMachines
  class Web
    # The table of [resource, slot] rows that the resources page and a resource's page show, and that the script
    # keeps current: each <tr> carries its key (data-key) and each cell its field (data-field), the time-left cell the
    # lease's expires_at, and the table the store's now, so that the browser counts down without asking. With
    # actions on, a held row has a Revoke button (a POST form to /revoke); with actions off there is none at all.
    class RowsTable
      HEADINGS = ["Resource", "Slot", "Holder", "Token", "Fence high-water", "State", "Time left"].freeze

      # +rows+: an Array of Row, at +now+ (Float seconds, the store's clock).
      def initialize(view, rows, now)
        @view = view
        @rows = rows
        @now = now
      end

      def to_s
        v = @view
        headings = HEADINGS + (v.actions ? ["Action"] : [])
        attributes = { class: "rows", "data-now": @now, "data-resource-url": v.url("/resource"),
                       "data-revoke-url": v.url("/revoke"), "data-actions": v.actions }
        head = "<thead><tr>#{headings.map { "<th>#{v.h(_1)}</th>" }.join}</tr></thead>"
        <<~HTML
          #{v.tag("table", attributes, "\n#{head}\n<tbody>\n#{@rows.map { row(_1) }.join("\n")}\n</tbody>\n")}
          <p class="empty"#{" hidden" unless @rows.empty?}>No leases here.</p>
        HTML
      end

      private

      def row(row)
        v = @view
        link = v.url("/resource", name: row.resource, slot: row.slot)
        remaining = v.tag("td", { "data-field": "remaining", "data-expires-at": row.lease&.expires_at },
                          View.duration(row.remaining))
        <<~HTML.chomp
          <tr class="state-#{row.state}" data-key="#{v.h(row.key)}">
          <td data-field="resource"><a href="#{v.h(link)}">#{v.h(row.resource)}</a></td>
          <td data-field="slot">#{row.slot}</td>
          <td data-field="owner">#{cell(row.lease&.owner)}</td>
          <td data-field="token">#{cell(row.lease&.token)}</td>
          <td data-field="highest">#{cell(row.highest)}</td>
          <td data-field="state">#{row.state}</td>
          #{remaining}#{action(row)}
          </tr>
        HTML
      end

      def cell(value) = value.nil? ? "—" : value.to_s

      # The Revoke form of a row (hidden while its slot is free, since the script may see it taken again), with the
      # token shown: a lease that moved on since is not the one revoked.
      def action(row)
        return "" unless @view.actions

        v = @view
        inputs = { resource: row.resource, slot: row.slot, token: row.lease&.token || "" }.map do |name, value|
          v.tag("input", type: "hidden", name: name, value: value)
        end
        form = %(<form class="revoke" method="post" action="#{v.h(v.url("/revoke"))}"#{" hidden" if row.lease.nil?}>) +
               "#{inputs.join}<button type=\"submit\">Revoke</button></form>"
        %(\n<td data-field="action">#{form}</td>)
      end
    end
  end
end
