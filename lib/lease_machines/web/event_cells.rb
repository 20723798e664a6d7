# frozen_string_literal: true

module LeaseMachines
  class Web
    # A Store::Event as a resource's page shows it: the cells of its row in the events table (ResourcePage::COLUMNS,
    # the same text in the HTML the server renders and in the rows the script appends from the JSON), and its members
    # as the JSON carries them.
    module EventCells
      # The row's cells, Strings ("—" for a member the event has not).
      def self.cells(event)
        [event.id, View.time(event.at), event.slot, event.kind, event.owner, event.token,
         event.expires_at && View.time(event.expires_at), event.revision, event.highest, event.reason, note(event)]
          .map { _1.nil? ? "—" : _1.to_s }
      end

      # What the event means beyond its members, in words: a takeover, a transfer's predecessor, a write's fate.
      def self.note(event)
        replaced = event.replaced
        case event.kind
        when :acquired
          return nil unless replaced

          taken = event.takeover? ? "took over" : "replaced"
          "#{taken} owner #{replaced.owner}'s expired lease (token #{replaced.token}, expired " \
            "#{View.time(replaced.expires_at)})"
        when :transferred then replaced && "from owner #{replaced.owner} (token #{replaced.token}, now fenced)"
        when :write_refused then "write with token #{event.token} refused: #{event.reason}"
        when :write_accepted then "write with token #{event.token} accepted"
        when :revoked then "revoked (Store#revoke); token #{event.token} is fenced"
        end
      end

      # The event's members for JSON: Symbols as Strings, the replaced lease as a Hash, and whether it is a takeover.
      def self.to_h(event)
        replaced = event.replaced
        { id: event.id, resource: event.resource, slot: event.slot, kind: event.kind, at: event.at,
          owner: event.owner, token: event.token, expires_at: event.expires_at, revision: event.revision,
          highest: event.highest, reason: event.reason, takeover: event.takeover?,
          replaced: replaced && { owner: replaced.owner, token: replaced.token, expires_at: replaced.expires_at } }
      end
    end
  end
end
