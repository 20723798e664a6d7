# frozen_string_literal: true

module LeaseMachines
  class Web
    # A Timeline as an SVG image, inline on a resource's page and served alone at /resource.svg: a time axis (UTC)
    # across the top, a lane per owner, each grant a bar labeled with its token (and "took over" for a takeover,
    # "granted earlier" for one older than the events), its end named (expired, released, revoked, transferred,
    # reacquired), renewals as ticks on it, accepted writes as small green dots and refused writes as red crosses
    # labeled with their token, refused requests as grey diamonds. Every element has a <title> (the tooltip) and data-
    # attributes naming what it shows. Colours are presentation attributes, so the image looks the same without the
    # page's stylesheet.
    class TimelineSvg
      WIDTH = 960
      LEFT = 130
      RIGHT = 30
      TOP = 48
      LANE = 52
      BAR = 16
      # Tick steps, Float seconds: the first that puts at most 8 ticks on the axis (#axis).
      STEPS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900,
               1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400, 172_800, 604_800, 2_592_000, 31_536_000].freeze
      ENDINGS = { expired: "expired", released: "released", revoked: "revoked", transferred: "transferred",
                  reacquired: "reacquired", open: "to its expiry" }.freeze
      GREY = "#56616b"
      RED = "#c62828"

      def initialize(view, timeline)
        @v = view
        @timeline = timeline
        @lanes = timeline.lanes
        span = timeline.span
        @from, @to = span ? padded(*span) : [0.0, 1.0]
      end

      def to_s
        height = TOP + ([@lanes.size, 1].max * LANE) + 24
        parts = [caption, *axis(height), *@lanes.each_with_index.map { |owner, index| lane(owner, index) },
                 *@timeline.bars.map { bar(_1) }, *@timeline.marks.map { mark(_1) }]
        parts << empty if @timeline.events.empty?
        @v.tag("svg", { xmlns: "http://www.w3.org/2000/svg", class: "timeline-svg", viewBox: "0 0 #{WIDTH} #{height}",
                        width: WIDTH, height: height, role: "img", "aria-label": "Holders of the resource over time",
                        "font-family": "system-ui, sans-serif", "font-size": 12 }, "\n#{parts.join("\n")}\n") + "\n"
      end

      private

      # The span with a margin each side (more on the right, for the labels at the bars' ends), never empty, so that
      # #x never divides by zero: at least a millisecond wide, and at least a few steps of the Floats there (at 1e17 s
      # they are 16 s apart: a millisecond's margin would leave the span a single instant). A span whose ends or width
      # are not finite is drawn as the first second of the epoch, everything at one end of the axis or the other.
      def padded(from, to)
        return [0.0, 1.0] unless from.finite? && to.finite?

        width = [to - from, 1e-3, [from.abs, to.abs].max * Float::EPSILON * 8].max
        low = from - (width * 0.03)
        high = to + (width * 0.12)
        low.finite? && high.finite? && low < high ? [low, high] : [0.0, 1.0]
      end

      # The x of +at+ on the axis, clamped to it; an instant the scale cannot place (NaN) at its left end.
      def x(at)
        share = (at - @from) / (@to - @from)
        share = 0.0 if share.nan?
        (LEFT + (share * (WIDTH - LEFT - RIGHT))).clamp(LEFT, WIDTH - RIGHT).round(1)
      end

      def middle(owner) = TOP + (@lanes.index(owner) * LANE) + (LANE / 2)

      def text(content, **attributes) = @v.tag("text", attributes, @v.h(content))
      def title(content) = @v.tag("title", {}, @v.h(content))

      def caption
        span = @timeline.span
        text("UTC · #{View.time(span&.first)} to #{View.time(span&.last)}", class: "caption", x: 8, y: 16, fill: GREY)
      end

      # The ticks, a step apart: never a step finer than the Floats there, which could not tell its ticks apart.
      def axis(height)
        fine = [@from.abs, @to.abs].max * Float::EPSILON
        step = STEPS.find { _1 >= fine && (@to - @from) / _1 <= 8 } || STEPS.last
        first = (@from / step).ceil * step
        ticks = (0..8).map { first + (_1 * step) }.select { _1 <= @to }
        ticks.map do |at|
          @v.tag("line", class: "tick", x1: x(at), y1: TOP - 8, x2: x(at), y2: height - 20, stroke: "#e3e7eb") +
            text(clock(at, step), class: "tick-label", x: x(at), y: TOP - 14, "text-anchor": "middle", fill: GREY)
        end
      end

      # +at+ as the axis writes it: the time of day, to the millisecond for steps under a second, with the date for
      # steps of a day or more.
      def clock(at, step)
        pattern = if step >= 86_400 then "%m-%d %H:%M"
                  elsif step >= 1 then "%H:%M:%S"
                  else "%H:%M:%S.%L"
                  end
        Time.at(at).utc.strftime(pattern)
      rescue RangeError
        format("%.3f", at)
      end

      def lane(owner, index)
        y = TOP + (index * LANE) + (LANE / 2)
        label = owner.nil? ? "(no owner)" : "owner #{owner}"
        line = @v.tag("line", x1: LEFT, y1: y, x2: WIDTH - RIGHT, y2: y, stroke: "#d5dbe1", "stroke-dasharray": "2 3")
        @v.tag("g", { class: "lane", "data-owner": owner || "" },
               text(label, class: "lane-label", x: 8, y: y + 4, "font-weight": 600, fill: "#1d2329") + line)
      end

      def bar(bar)
        y = middle(bar.owner)
        left = x(bar.from)
        right = [x(bar.to), left + 2].max
        top = y - (BAR / 2)
        ending = bar.ending == :open ? "until #{clock(bar.to, 0.001)}" : ENDINGS.fetch(bar.ending)
        ending += " →" if bar.to > @to
        parts = [
          title(bar_title(bar)),
          @v.tag("rect", class: "bar", x: left, y: top, width: (right - left).round(1), height: BAR, rx: 3,
                         fill: bar.ending == :open ? "#5b9bd5" : "#2f6fb0"),
          text(bar_label(bar), class: "bar-label", x: left, y: top - 4, fill: "#1d2329"),
          text(ending, class: "bar-end", x: right, y: y + (BAR / 2) + 13, "text-anchor": "end", fill: GREY),
          *bar.renewals.map { renewal(_1, y) }
        ]
        @v.tag("g", { class: "grant", "data-owner": bar.owner, "data-token": bar.token, "data-slot": bar.slot,
                      "data-ending": bar.ending, "data-from": bar.from, "data-to": bar.to,
                      "data-earlier": (true if bar.earlier) }, "\n#{parts.join("\n")}\n")
      end

      def bar_label(bar)
        "token #{bar.token}#{" · took over" if bar.takeover}#{" · granted earlier" if bar.earlier}"
      end

      def bar_title(bar)
        from = bar.earlier ? "granted before #{View.time(bar.from)}" : View.time(bar.from)
        "token #{bar.token} to owner #{bar.owner}#{" (slot #{bar.slot})" if bar.slot.positive?}: " \
          "#{from} to #{View.time(bar.to)}, #{ENDINGS.fetch(bar.ending)}"
      end

      def renewal(at, y)
        @v.tag("line", { class: "renewal", x1: x(at), y1: y - (BAR / 2) - 3, x2: x(at), y2: y + (BAR / 2) + 3,
                         stroke: "#ffffff", "stroke-width": 2 }, title("renewed at #{View.time(at)}"))
      end

      def mark(mark)
        cx = x(mark.at)
        cy = middle(mark.owner)
        data = { "data-event": mark.event_id, "data-token": mark.token || "", "data-owner": mark.owner || "" }
        case mark.kind
        when :write_accepted
          @v.tag("circle", { class: "write-accepted", **data, cx: cx, cy: cy, r: 4, fill: "#13794a", stroke: "#ffffff" },
                 title(mark_title(mark)))
        when :write_refused then refused_write(mark, cx, cy, data)
        else
          diamond = "M#{cx} #{cy - 5}L#{cx + 5} #{cy}L#{cx} #{cy + 5}L#{cx - 5} #{cy}Z"
          @v.tag("path", { class: "request-refused", **data, d: diamond, fill: "#9aa4ad" }, title(mark_title(mark)))
        end
      end

      # A refused write: a red cross on its token's owner's lane, labeled with the token.
      def refused_write(mark, cx, cy, data)
        cross = "M#{cx - 6} #{cy - 6}L#{cx + 6} #{cy + 6}M#{cx - 6} #{cy + 6}L#{cx + 6} #{cy - 6}"
        parts = [title(mark_title(mark)), @v.tag("path", d: cross, stroke: RED, "stroke-width": 3),
                 text("token #{mark.token} refused", x: cx, y: cy + 22, "text-anchor": "middle", fill: RED,
                                                     "font-weight": 600)]
        @v.tag("g", { class: "write-refused", **data }, parts.join)
      end

      def mark_title(mark)
        at = View.time(mark.at)
        case mark.kind
        when :write_accepted then "write with token #{mark.token} accepted at #{at} (fence mark #{mark.highest})"
        when :write_refused
          "write with token #{mark.token} refused at #{at}: #{mark.reason} (fence mark #{mark.highest || "none"})"
        else "request refused at #{at}: #{mark.reason}"
        end
      end

      def empty = text("No events yet.", x: WIDTH / 2, y: TOP + (LANE / 2), "text-anchor": "middle", fill: "#6b7680")
    end
  end
end
