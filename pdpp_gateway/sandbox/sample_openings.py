"""How each long sample text with a buried fact opens: what its sender writes first.

Contract: ``OPENINGS`` maps each such text (a mail body record id, or a GitHub issue record id)
to its opening: about 2,000 characters on the text's subject, in its sender's voice, as a real
message goes on about its subject. A meaning-based search reads a field's first 2,048
characters (as the reference RS does), so these openings are what it ranks the texts by. They
hold no fact sentence, no decoy and no answer to a question: no amount, code, date, time,
place or name that answers one (the facts lie 10k+ characters further in, past filler).
"""

from __future__ import annotations

from typing import Final

_PARAGRAPHS: Final[dict[str, tuple[str, ...]]] = {
    "body_lisbon_lease": (
        "Dear tenant, your lease on the apartment ends soon, and we are glad to offer you a renewal "
        "for another year. The new terms are set out below, together with the house rules, the rent "
        "and the deposit; the lease itself is attached as a PDF. Please read everything before you "
        "sign, and write to us if anything is unclear.",
        "The new terms. The renewal runs for one more year from the end of your current lease, on the "
        "same terms as before except where this email says otherwise. You may end the lease early with "
        "two months' written notice once the first six months have passed. We may only end it early for "
        "the reasons the law allows, such as unpaid rent or serious damage to the property.",
        "The rent. The monthly rent goes up slightly this year, in line with the official index for "
        "housing rents. It is due on the first working day of each month by bank transfer to the same "
        "account as now; please use your apartment number as the reference. If a payment is going to "
        "be late, tell us before it is due and we will find a solution together.",
        "The deposit. Because the rent changes, the deposit is adjusted to match it. The new amount and "
        "the date by which the top-up must be paid are set out in the payments section further down. "
        "As before, we hold the deposit in a separate account and return it within a month of the end "
        "of the lease, less the cost of any damage beyond normal wear and tear.",
        "House rules. The building rules are the same as last year: no smoking in the common areas, and "
        "please keep the stairs and the entrance hall free of bikes and boxes. Pets are allowed with our "
        "written agreement. Small repairs such as light bulbs and tap washers are yours; for anything "
        "bigger, tell us and we will send someone. We visit once a year to check the apartment, always "
        "with notice.",
        "Signing. Please sign the lease on each page and send it back to us by email, or drop it in at "
        "our office on any weekday morning.",
    ),
    "body_storage_unit": (
        "Hello, and thank you for renting a storage unit with us. This email has everything you need "
        "to get in and out: how to find the site, how the gate and your locker work, and who to call "
        "if you get locked out. Please keep it somewhere safe.",
        "Finding the site. We are on the industrial estate just off the ring road, behind the builders' "
        "merchant. Follow the blue signs from the roundabout; our entrance is the second gate on the "
        "left. There is free parking in front of the loading bay, and trolleys and a pallet truck wait "
        "next to the lifts for you to use.",
        "The gate. The main gate opens with the keypad on the post by the car lane. Type your personal "
        "code and the gate opens for one vehicle; please wait for it to close behind you, and never let "
        "anyone else in on your code. The gate only opens during access hours, which are set out "
        "further down in this email. Outside them the site is alarmed and the keypad does not respond.",
        "Your unit and locker. Your unit is on the ground floor, in the corridor to the right of the "
        "lifts. It has its own lock and you hold the only key: we do not keep a copy. Small valuables "
        "can go in one of the lockers in the reception area, which open with a code of their own. "
        "Please do not store food, liquids, gas bottles, paint or anything that could catch fire, and "
        "keep the corridor in front of your unit clear.",
        "If you get locked out. If your code does not work, first check that you are within access "
        "hours. If it still does not work, or you have lost the key to your unit, call the site manager "
        "on the number printed on the keypad; during office hours someone can come and let you in. We "
        "may ask to see some ID before we do.",
        "Payments. Rent is taken monthly in advance from your card. If a payment fails we pause your "
        "access until it is paid, so please keep your card details up to date in your account.",
    ),
    "body_porto_trip": (
        "Thank you for booking your weekend in Porto with us. Your flight details, baggage allowance "
        "and check-in instructions are below. Please check that the names match your passports, and "
        "keep this email to hand on the day you travel.",
        "Your flights. You are booked on a return flight, out on Friday and back on Sunday evening. The "
        "flight numbers, times and terminals of both flights are in the summary further down, together "
        "with your booking reference. Please check them again the day before you travel, as times can "
        "change; if they do, we will also tell you by email and text message.",
        "Baggage. Your fare includes one small bag that fits under the seat in front of you and one "
        "cabin bag for the overhead locker. If you want to take a larger suitcase in the hold, add it "
        "in Manage my booking before you fly: it costs much less online than at the airport. Liquids in "
        "your cabin bag must be in small containers, all in one clear plastic bag.",
        "Checking in. Online check-in opens a day and a half before departure and closes a couple of "
        "hours before it. Check in on our website or in the app and download your boarding passes to "
        "your phone, or print them. If you have a bag to drop, go to the bag drop desks in the "
        "departures hall; if not, you can go straight to security.",
        "At the airport. Please arrive at least two hours before departure. Boarding starts well before "
        "the departure time and the gate closes twenty minutes before it; we cannot wait for late "
        "passengers. Have your passport or identity card ready at the gate, with the same names as on "
        "the booking.",
        "Extras and changes. Your seats, chosen when you booked, are printed on your boarding passes. "
        "You can still change them, add priority boarding or book airport parking in Manage my "
        "booking, and you can change the dates or names for a fee up to a few hours before you fly.",
    ),
    "body_spare_key": (
        "Hi, here are the notes for the apartment handover, so that you have everything in one "
        "place when you move in. They cover the keys, the meters, the heating and the bins, and a "
        "few contacts in the building. Let us know if anything is missing.",
        "Keys. At the handover you get two sets of keys, each with the key to the street door of the "
        "building and the two keys to the apartment door. Please try every key before we leave and sign "
        "the key receipt. If you lose one, tell us straight away: the street door key has to be ordered "
        "from the building's management company, and that can take a couple of weeks.",
        "Meters. The electricity meter is in the cupboard on the landing and the water meter is under "
        "the kitchen sink. We read both together on the day and write the readings on the handover "
        "form, so that you only pay for what you use from then on. Please set up the electricity and "
        "water accounts in your own name with the suppliers in your first week.",
        "Heating and hot water. The boiler in the kitchen heats the radiators and the water. Its timer "
        "is set for mornings and evenings, and the instructions are in the drawer next to it. If the "
        "pressure drops, the small tap underneath tops it up. It was serviced this autumn; we arrange "
        "the next service with you in advance.",
        "Bins and recycling. General waste goes in the grey bins in the courtyard. Paper, plastic and "
        "glass go in the coloured containers at the corner of the street. The council empties the grey "
        "bins every night except Sunday, so please put your bags out after dinner, not in the morning.",
        "The neighbours. It is a quiet building, mostly families and a few older residents who have "
        "lived here for years. Please keep the noise down late in the evening, and let the people below "
        "know if you are having friends over.",
        "Contacts. For anything urgent in the apartment, like a leak or a power cut, call our office "
        "first. For the building itself, such as the lift or the street door, write to the management "
        "company; their details are in the folder on the kitchen table.",
    ),
    "body_office_wifi": (
        "Hi everyone, and welcome to the new office! This note covers the practical things for "
        "your first weeks: door badges, desks and meeting rooms, the printers and the wifi. Have "
        "a read when you get a moment, and tell me if anything doesn't work.",
        "Door badges. Your badge opens the front door of the building, the lifts and our floor. Pick it "
        "up at reception on your first morning; bring some ID, and they will take your photo there. "
        "Outside normal hours your badge still opens our floor, but please sign the book at the "
        "security desk on your way in.",
        "Desks. We don't have fixed desks any more. Book one in the desk app the day before, and clear "
        "it when you leave so that the cleaners can do their job at night. Lockers are along the wall by "
        "the kitchen: take any free one and put your name on it. Every desk has a monitor, keyboard and "
        "docking station, and spare cables are in the cabinet by the window.",
        "Meeting rooms. We have six rooms on our floor, from two small phone booths to the big room by "
        "the terrace that seats twenty. Book them in the shared calendar, and please cancel if you no "
        "longer need the room. Every room has a screen you can share your laptop to, and the two larger "
        "rooms have the video call kit.",
        "Printers. The printers are next to the kitchen. Send your job to the office print queue and "
        "release it at the printer with your badge, so nothing sits in the tray. Paper and toner are in "
        "the cupboard underneath; tell me when we are running low.",
        "The wifi. Laptops you got from us join the staff network by themselves once you have signed in "
        "for the first time. Phones and visitors' laptops go on the guest network; how to join it is "
        "further down in this note, and on the card at reception. Please don't share the staff network "
        "with visitors.",
        "Kitchen. Coffee, tea and fruit are free. The dishwasher runs every evening, so please load your "
        "cups before you go home.",
    ),
    "body_dentist": (
        "Dear patient, this is a reminder of your upcoming visit to our clinic. Below you will "
        "find how to reach us, what to bring, and how to move or cancel your appointment. We look "
        "forward to seeing you.",
        "How to find us. The clinic is on the first floor of the building above the pharmacy, a short "
        "walk from the metro station, and there is a lift at the back of the entrance hall. Parking in "
        "the street is difficult during the day, so we suggest coming by public transport. Please "
        "arrive ten minutes early so that we can check your details before you go in.",
        "What to bring. Please bring your identity card, your health insurance card if you have one, "
        "and a list of any medicines you take. If you have had X-rays taken at another clinic in the "
        "last two years, bring them, or ask that clinic to send them to us. Children must come with a "
        "parent or guardian.",
        "Before your visit. Eat normally and brush your teeth as usual. If you are nervous about "
        "treatment, tell us when you arrive: we explain each step before we start, and we can stop at "
        "any time. If you take blood thinners or have a heart condition, please call us before the day, "
        "as some treatments need extra care.",
        "Moving or cancelling. You can move or cancel your appointment by phone, by replying to this "
        "email, or in the patient area of our website. We keep a waiting list, so a slot you give up "
        "often helps another patient. If you miss an appointment without telling us, we may charge a "
        "fee for the missed visit.",
        "Payment. We accept cash, cards and most insurance plans. For larger treatments we give you a "
        "written estimate first, and you can pay in instalments. A receipt is sent by email after every "
        "visit.",
        "Check-ups. We recommend a check-up and a cleaning with our hygienist twice a year, and we will "
        "send you a reminder when the next one is due.",
    ),
    "body_car_service": (
        "Hello, your car is ready to collect. Below is the report of the service we carried out: "
        "the checks we made, the parts we replaced and what the work cost. Please read it before "
        "you come in, and call us with any questions.",
        "What we checked. We changed the engine oil and the oil filter, checked the air filter and the "
        "cabin filter, and topped up the coolant and the screen wash. We tested the lights, the wipers, "
        "the horn and the battery, and while the car was up on the lift we looked at the suspension, "
        "the steering and the exhaust from underneath. We also checked the pressure and tread of every "
        "tyre, the spare included.",
        "What we found. The car is in good condition for its age. There is a small oil mark under the "
        "engine, which we cleaned off; it is not a leak that needs fixing now, but we will look at it "
        "again next time. The front wiper blades are starting to smear, and you may want to replace "
        "them before the winter.",
        "Parts and labour. The invoice lists each part we fitted with its price, and the labour in "
        "hours at our standard rate. We only fit parts that meet the maker's specification, and every "
        "part comes with a two-year warranty. If we find something during a service that was not on "
        "the booking, we always call you to ask before we do the work.",
        "Collecting the car. Your car is parked in front of the workshop and the keys are at the front "
        "desk. We are open on weekdays and on Saturday mornings, and you can pay by card or bank "
        "transfer when you collect it. Your service book has been stamped, and we will send you a "
        "reminder when the next service is due.",
        "Afterwards. New parts can feel a little different for the first few days. If you hear a noise "
        "or notice anything unusual, bring the car back and we will check it free of charge. Thank you "
        "for choosing us to look after your car.",
    ),
    "body_insurance": (
        "Dear customer, thank you for taking out travel insurance with us. This email sets out "
        "your policy: what it covers, the limits that apply, and how to make a claim while you "
        "are away. Please keep it with your travel documents.",
        "What is covered. Your policy covers emergency medical treatment abroad, including a stay in "
        "hospital and getting you home if a doctor says you need to be. It covers cancelling or cutting "
        "short your trip for a reason outside your control, such as illness or a death in the family; "
        "lost, stolen or damaged luggage; delays to your journey out or back; and personal liability if "
        "you accidentally injure someone or damage their property. The limit for each part of the cover "
        "is in your policy schedule further down.",
        "What is not covered. We do not cover medical conditions you had before you bought the policy, "
        "unless you told us about them and we accepted them. We do not cover claims arising from "
        "alcohol or drugs, from dangerous sports not listed in your schedule, or from travelling against "
        "official advice. Valuables left unattended, such as a phone left in a car, are not covered, "
        "and an excess applies to most claims.",
        "If you need medical help. In an emergency, go to the nearest hospital first and call our "
        "assistance line as soon as you can; it is open day and night, all year. Our team talks to the "
        "hospital, arranges payment where possible and organises your journey home if you need it. "
        "Keep every receipt and medical report.",
        "How to claim. Claim online in your account or by email once you are home. Tell us what "
        "happened, when and where, and send copies of the receipts, medical reports, a police report "
        "for anything stolen, and proof of your travel bookings.",
        "Changes. You can add travellers or extend your cover at any time before you travel, and cancel "
        "in the first two weeks for a full refund if you have not travelled or claimed.",
    ),
    "body_pension": (
        "Dear member, please find your annual pension statement below. It shows what was paid "
        "into your pension this year, how your investments did and the value of your pension pot. "
        "Please check your personal details and tell us if anything has changed.",
        "Your contributions. During the year you and your employer both paid into your pension every "
        "month through payroll, and you received tax relief on your own contributions. The table "
        "further down shows what each of you paid in, month by month, with any extra lump sums listed "
        "separately. If the figures do not match your own records, please let us know.",
        "How your investments did. Your pension is invested in our default lifestyle fund, which "
        "spreads your money across shares, bonds and property around the world. Markets rose over the "
        "year as a whole, although there were some weeks of sharp falls in the spring. Our charges are "
        "taken from the fund and are already reflected in the value shown. As you get closer to your "
        "retirement age, the fund gradually moves your money into lower-risk investments to protect "
        "what you have built up.",
        "Your pot and your projection. The statement shows the value of your pension pot at the end of "
        "the year, and an estimate of the income it might give you in retirement if you keep paying in "
        "at the same rate. The projection is only an illustration: it is not guaranteed, and it depends "
        "on what you pay in, how investments perform and when you choose to retire.",
        "Choices you can make. You can change how much you pay in, switch to another fund or change "
        "your retirement age at any time in your online account. You can also tell us who should "
        "receive your pension if you die, with an expression of wish form; please keep it up to date.",
        "Getting help. We cannot give you personal financial advice, but a free public guidance service "
        "can help you understand your options. For questions about this statement, reply to this email "
        "or call our member helpline.",
    ),
    "body_school_trip": (
        "Dear parents and guardians, our pupils are going on a day trip this term, and we need "
        "your consent for your child to take part. The details of the day, the cost and what to "
        "bring are below, followed by the consent form. Please sign it and return it to the "
        "school office.",
        "The day. The pupils will visit a palace and its gardens in the hills, with a guided tour in the "
        "morning and a walk through the park after lunch. The visit is part of this term's history and "
        "geography work, and the children will fill in a short worksheet as they go. They travel by "
        "coach with their class teachers and several parent volunteers, and they will be back at school "
        "in time for the usual pick-up.",
        "What to bring. Please give your child a packed lunch, a water bottle and a snack in a small "
        "backpack they can carry all day. They should wear comfortable shoes for walking and bring a "
        "raincoat, as the weather in the hills can change quickly; sun cream and a hat are a good idea "
        "if the forecast is warm. Please do not send money, phones or games.",
        "Health and medicines. If your child takes any medicine or has an allergy we should know "
        "about, write it on the form below, and on the morning of the trip hand the medicine to the "
        "class teacher in a bag with your child's name on it. Children who get travel sick should have "
        "a light breakfast.",
        "Payment. The cost covers the coach and the entrance with the guided tour. You can pay at the "
        "school office or by bank transfer with your child's name as the reference. If the cost is a "
        "difficulty for your family, please speak to us in confidence: no child will miss the trip for "
        "that reason.",
        "Volunteers. We still need two or three parents to come along; if you can help, tick the box on "
        "the form. On the form, please also give your child's name and class and a phone number where "
        "we can reach you during the day.",
    ),
    "body_gym": (
        "Hi, your membership is coming up for renewal. Below you will find your plan, the new "
        "prices, and how to change or cancel your membership before it renews. Thanks for "
        "training with us!",
        "Your plan. You are on our standard monthly plan: unlimited use of the gym floor, the pool and "
        "the sauna, and all group classes. It renews automatically by direct debit unless you change "
        "it, and the renewal date and new monthly price are in the table below.",
        "Why prices are changing. Our costs for energy and staff went up this year, and we have put "
        "money into new equipment: new rowing machines and bikes on the cardio floor, a bigger free "
        "weights area and new changing rooms downstairs. It is our first price change in two years, and "
        "we have kept it as small as we could.",
        "Classes. The timetable now has more than forty classes a week, from early morning spin to yoga "
        "and pilates in the evening. New this season are lunchtime strength circuits and a swimming "
        "course for beginners. Book classes in the app up to a week ahead, and if you can't come, cancel "
        "your place so that someone on the waiting list can have it.",
        "Opening hours. The gym opens early in the morning and closes late in the evening on weekdays, "
        "with shorter hours at weekends. The pool closes half an hour before the gym for cleaning. "
        "Opening times around holidays are posted in the app and by the front desk.",
        "Changing your plan. To move to an off-peak plan, add a partner or pause your membership for up "
        "to three months, use the app or ask at the front desk before your renewal date.",
        "Cancelling. You can cancel at any time with one month's notice: email us or fill in the form "
        "at the front desk. We confirm by email and take your last payment at the end of the notice "
        "period. On a fixed-term contract, the remaining months are still due. If you are not sure which "
        "plan you are on, the front desk can tell you.",
    ),
    "I0009": (
        "The app crashes on start-up for some users, but only on machines set to certain locales; "
        "with the default locale it starts fine. Steps to reproduce are below, with what we have "
        "found so far.",
        "## What happens\n\nWhen the app starts, it shows the splash screen for a moment and then closes "
        "without an error dialog. Nothing is written to the app's own log; the only trace is a stack "
        "trace in the terminal when it is started from the command line, and that trace ends in the "
        "code that formats amounts and dates for the first screen. It happens every time for the users "
        "affected, so they cannot use the app at all.",
        "## Who is affected\n\nSo far we have reports from users on Linux and macOS, on the last release "
        "and on the current main branch. All of them have a system locale that writes numbers with a "
        "decimal comma rather than a decimal point. Users with the same system and version but an "
        "English locale are not affected, and neither is our CI, which runs with the default locale.",
        "## Expected behaviour\n\nThe app starts and shows amounts and dates in the user's own format, "
        "or falls back to a default format if it cannot, instead of crashing.",
        "## What we know so far\n\nThe stack trace points at parsing an amount that we format ourselves "
        "when we load the settings file: we write it in the user's locale and read it back as if it "
        "used a decimal point. That would explain why only locales with a decimal comma break. We have "
        "not yet confirmed it in a debugger.",
        "## Next steps\n\n- add a CI job that starts the app under a non-English locale\n- read and write "
        "the settings file in one fixed format\n- check the other places where we format numbers and "
        "dates by hand\n\nIf you are affected, please add your operating system, the output of `locale` "
        'and the full stack trace in a comment. Please don\'t add "me too" comments; use a reaction instead.',
    ),
    "I0018": (
        "The next release is on hold until one blocker is resolved. This issue tracks that blocker "
        "and the release checklist; please don't tag a new version until it is closed.",
        "## Release checklist\n\n- [ ] every issue in the milestone closed or moved to the next one\n"
        "- [ ] the blocker below resolved and confirmed by the maintainers\n- [ ] CI green on main for "
        "the release commit, on all platforms\n- [ ] changelog updated with every user-facing change "
        "and a short upgrade note\n- [ ] version bumped in the package metadata and the docs\n- [ ] "
        "release candidate built and installed by hand on Linux, macOS and Windows\n- [ ] smoke test: "
        "create a trip, add stops, export the itinerary, sync with the calendar\n- [ ] announcement "
        "drafted for the forum and the mailing list",
        "## Why we are holding the release\n\nWe usually release as soon as the milestone is done, and "
        "this one nearly is: the new itinerary export, offline maps and the calendar sync fixes are all "
        "merged. But one item outside the code has to be sorted out first, and releasing before it is "
        "would mean shipping packages that we might have to withdraw and publish again. That would "
        "confuse users and the people who package the app downstream, so we would rather wait a little.",
        "## In the meantime\n\nKeep merging fixes to main as usual; they go into this release if they "
        "land before the tag. Please hold large features until after the release, so that the release "
        "candidate stays stable. If you package the app downstream, watch this issue: we will comment "
        "here when the hold is lifted and the release is tagged.",
        "## Who is on it\n\nThe maintainers who look after the release infrastructure are handling the "
        "blocker and will post updates here. Please ask questions about the release in this issue "
        "rather than in chat, so that the answers stay in one place. Thanks, everyone, for your patience.",
    ),
}
OPENINGS: Final = {key: "\n\n".join(paragraphs) for key, paragraphs in _PARAGRAPHS.items()}
